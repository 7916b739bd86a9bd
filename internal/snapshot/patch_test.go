package snapshot

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

func TestPatchPathExactBytes(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	// CRLF line ends and a trailing-space line must come out unconverted;
	// a text conversion attribute must not apply.
	sh(t, wt, `printf 'one\r\ntwo \r\n' > 'sp ace.txt'; printf '\000\001\002' > bin.dat; printf 'gone\n' > del.txt; printf '* text=auto eol=lf\n' > .gitattributes`)
	e := openEngine(t, wt)
	a := capture(t, e, "")
	sh(t, wt, `printf 'one\r\nTWO \r\n' > 'sp ace.txt'; printf '\000\001\003\004' > bin.dat; rm del.txt; printf 'new\n' > add.txt`)
	b := capture(t, e, "")
	ctx := context.Background()

	p, err := e.PatchPath(ctx, a.Tree, b.Tree, "sp ace.txt")
	if err != nil {
		t.Fatal(err)
	}
	if p.Binary || !strings.Contains(string(p.Patch), "\n-two \r\n+TWO \r\n") || p.OldSize != 11 || p.NewSize != 11 {
		t.Fatalf("text patch = %+v\n%q", p, p.Patch)
	}
	if strings.Contains(string(p.Patch), "bin.dat") {
		t.Fatalf("patch of one path mentions another:\n%s", p.Patch)
	}

	p, err = e.PatchPath(ctx, a.Tree, b.Tree, "bin.dat")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Binary || !strings.Contains(string(p.Patch), "GIT binary patch") || p.OldSize != 3 || p.NewSize != 4 {
		t.Fatalf("binary patch = %+v\n%s", p, p.Patch)
	}

	p, err = e.PatchPath(ctx, a.Tree, b.Tree, "del.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(p.Patch), "deleted file mode") || p.NewSize != -1 || p.OldSize != 5 {
		t.Fatalf("deleted patch = %+v\n%s", p, p.Patch)
	}
	p, err = e.PatchPath(ctx, a.Tree, b.Tree, "add.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(p.Patch), "+new\n") || p.OldSize != -1 {
		t.Fatalf("added patch = %+v\n%s", p, p.Patch)
	}

	// A pathspec character is a literal name, and an unchanged path has
	// an empty patch.
	p, err = e.PatchPath(ctx, a.Tree, b.Tree, "*.txt")
	if err != nil || len(p.Patch) != 0 {
		t.Fatalf("PatchPath(*.txt) = %q, %v; want an empty patch", p.Patch, err)
	}
	if _, err := e.PatchPath(ctx, a.Tree, b.Tree, ""); err == nil {
		t.Fatal("PatchPath with no path succeeded")
	}
}

// A side larger than PatchLimit is not diffed: binary content is
// recognised from its first bytes (a NUL anywhere after them does not
// count, as in git), large text is TooLarge.
func TestPatchPathLarge(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	big := PatchLimit + 4096
	// big.bin: binary from its first bytes; late.txt: text for git, with a
	// NUL only after binaryProbe bytes; huge.txt: plain text.
	sh(t, wt, fmt.Sprintf(`head -c %d /dev/urandom > big.bin
		{ head -c %d /dev/zero | tr '\0' 'a'; printf '\000'; } > late.txt
		head -c %d /dev/zero | tr '\0' 'b' > huge.txt`, big, big, big))
	e := openEngine(t, wt)
	a := capture(t, e, "")
	sh(t, wt, `printf 'x' >> big.bin; printf 'x' >> late.txt; printf 'x' >> huge.txt`)
	b := capture(t, e, "")
	ctx := context.Background()
	for _, tc := range []struct {
		path          string
		binary, large bool
	}{{"big.bin", true, false}, {"late.txt", false, true}, {"huge.txt", false, true}} {
		p, err := e.PatchPath(ctx, a.Tree, b.Tree, tc.path)
		if err != nil {
			t.Fatal(err)
		}
		want := int64(big)
		if tc.path == "late.txt" {
			want++
		}
		if p.Binary != tc.binary || p.TooLarge != tc.large || len(p.Patch) != 0 || p.OldSize != want || p.NewSize != want+1 {
			t.Errorf("%s: binary %v, too large %v, %d patch bytes, sizes %d → %d; want binary %v, too large %v, no patch, %d → %d",
				tc.path, p.Binary, p.TooLarge, len(p.Patch), p.OldSize, p.NewSize, tc.binary, tc.large, want, want+1)
		}
	}
	// Unchanged: the same entry on both sides, an empty patch.
	p, err := e.PatchPath(ctx, a.Tree, a.Tree, "big.bin")
	if err != nil || p.Binary || p.TooLarge || len(p.Patch) != 0 {
		t.Fatalf("unchanged big.bin = %+v, %v", p, err)
	}
}

// BenchmarkPatchPathBigBinary opens the diff of a changed 100 MB binary
// file (the TUI preview's diff of one path), against git computing the
// patch the way PatchPath did before it looked at sizes first.
func BenchmarkPatchPathBigBinary(b *testing.B) {
	wt := gittest.NewRepo(b)
	sh(b, wt, `head -c 100000000 /dev/urandom > big.bin`)
	e := openEngine(b, wt)
	from := capture(b, e, "")
	sh(b, wt, `head -c 1000 /dev/urandom >> big.bin`)
	to := capture(b, e, "")
	ctx := context.Background()
	b.Run("yolop", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			p, err := e.PatchPath(ctx, from.Tree, to.Tree, "big.bin")
			if err != nil || !p.Binary {
				b.Fatalf("%+v, %v", p, err)
			}
		}
	})
	b.Run("git-diff-tree-binary", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := e.repo.Run(ctx, "diff-tree", "-p", "--binary", "--full-index", from.Tree, to.Tree, "--", "big.bin"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
