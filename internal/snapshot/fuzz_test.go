package snapshot

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io/fs"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// The parsers of git's output never panic, and what they accept is
// consistent. `go test` runs the seeds only; `go test -fuzz=FuzzX` explores.

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte(" M a.txt\x00?? new dir/f\x00D  gone\x00R  new\x00old\x00?? nested/\x00!! ignored\x00"))
	f.Add([]byte("UU conflict\x00AA both\x00 M node_modules/x\x00?? .yolop-tmp-1\x00"))
	f.Add([]byte("M"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, out []byte) {
		paths, _ := parseStatus(out)
		for _, p := range paths {
			if p == "" || strings.HasSuffix(p, "/") || excludedPath(p) {
				t.Fatalf("parseStatus returned %q", p)
			}
		}
	})
}

func FuzzParseRawDiff(f *testing.F) {
	z := strings.Repeat("0", 40)
	a := strings.Repeat("a", 40)
	b := strings.Repeat("b", 40)
	f.Add([]byte(":000000 100644 " + z + " " + a + " A\x00new\x00:100644 100755 " + a + " " + a + " M\x00mode\x00:100644 000000 " + a + " " + z + " D\x00gone\x00"))
	f.Add([]byte(":100644 120000 " + a + " " + b + " T\x00swap\x00:100644 100644 " + a + " " + b + " M\x00d/f\x00"))
	f.Add([]byte(":100644 100644 " + a + " " + b + " R100\x00x\x00"))
	f.Add([]byte(":1 2 3 4 A"))
	f.Fuzz(func(t *testing.T, out []byte) {
		ch, err := parseRawDiff(out)
		if err != nil {
			return
		}
		if !sort.SliceIsSorted(ch, func(i, j int) bool { return ch[i].Path < ch[j].Path }) {
			t.Fatal("changes are not sorted")
		}
		var re bytes.Buffer
		for _, c := range ch {
			om, nm, oo, no, st := c.OldMode, c.NewMode, c.OldOID, c.NewOID, ""
			switch c.Kind {
			case Added:
				om, oo, st = "000000", z, "A"
			case Deleted:
				nm, no, st = "000000", z, "D"
			case TypeChanged:
				st = "T"
			case Modified, ModeChanged:
				st = "M"
			default:
				t.Fatalf("unknown kind %q", c.Kind)
			}
			fmt.Fprintf(&re, ":%s %s %s %s %s\x00%s\x00", om, nm, oo, no, st, c.Path)
		}
		again, err := parseRawDiff(re.Bytes())
		if err != nil {
			t.Fatalf("re-encoded diff does not parse: %v", err)
		}
		if len(again) != len(ch) {
			t.Fatalf("round trip: %d changes, want %d", len(again), len(ch))
		}
		for i := range ch {
			if again[i].Path != ch[i].Path || again[i].Kind != ch[i].Kind {
				t.Fatalf("round trip: %+v, want %+v", again[i], ch[i])
			}
		}
	})
}

func FuzzParseTree(f *testing.F) {
	oid := bytes.Repeat([]byte{0xab}, 20)
	m := map[string]fastEntry{"a.txt": {mode: "100644", oid: oid}, "dir": {mode: "40000", oid: oid}, "link": {mode: "120000", oid: oid}}
	content, _ := treeContent(m)
	f.Add(content, false)
	f.Add(append([]byte("100644 x\x00"), bytes.Repeat([]byte{1}, 32)...), true)
	f.Add([]byte("100644 \x00"+strings.Repeat("\x00", 20)), false)
	f.Add([]byte("160000 sub\x00"+strings.Repeat("\x01", 20)), false)
	f.Fuzz(func(t *testing.T, b []byte, sha256 bool) {
		n := 20
		if sha256 {
			n = 32
		}
		m, err := parseTree(b, n)
		if err != nil {
			return
		}
		content, mk := treeContent(m)
		again, err := parseTree(content, n)
		if err != nil {
			t.Fatalf("re-encoded tree does not parse: %v", err)
		}
		if !reflect.DeepEqual(again, m) {
			t.Fatalf("round trip changed the tree: %v != %v", again, m)
		}
		for _, rec := range bytes.Split(bytes.TrimSuffix(mk, []byte{0}), []byte{0}) {
			if len(rec) > 0 && !bytes.Contains(rec, []byte("\t")) {
				t.Fatalf("mktree record %q has no tab", rec)
			}
		}
		for _, e := range m {
			if hex.EncodeToString(e.oid) == "" || len(e.oid) != n {
				t.Fatalf("entry oid %x has the wrong length", e.oid)
			}
		}
	})
}

func FuzzDecodeModes(f *testing.F) {
	tree := strings.Repeat("c", 40)
	f.Add(encodeModes(tree, map[string]fs.FileMode{"secret.key": 0o600, "d/run.sh": 0o700}))
	f.Add(encodeModes(tree, nil))
	f.Add([]byte("yolop-modes 1 " + tree + "\x00999 x\x00"))
	f.Add([]byte("yolop-modes 1 " + tree + "\x00600 ../x\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, modes, err := decodeModes(b)
		if err != nil {
			return
		}
		for p, m := range modes {
			if m > 0o777 || checkPath(p) != nil {
				t.Fatalf("accepted %q %o", p, m)
			}
		}
		again, modes2, err := decodeModes(encodeModes(got, modes))
		if err != nil || again != got || !reflect.DeepEqual(modes, modes2) {
			t.Fatalf("round trip: %v %q %v", err, again, modes2)
		}
	})
}
