package worktree

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseStatus(t *testing.T) {
	t.Parallel()
	z := func(records ...string) []byte { return []byte(strings.Join(records, "\x00") + "\x00") }
	const oid = "1111111111111111111111111111111111111111"
	for _, tc := range []struct {
		name   string
		in     []byte
		branch string
		paths  []string
		err    bool
	}{
		{"clean", z("# branch.oid "+oid, "# branch.head main"), "main", nil, false},
		{"detached", z("# branch.oid "+oid, "# branch.head (detached)"), "", nil, false},
		{"empty output", nil, "", nil, false},
		{"modified, path with spaces", z("# branch.head yolop/x-abc", "1 .M N... 100644 100644 100644 "+oid+" "+oid+" a dir/b c.txt"), "yolop/x-abc", []string{"a dir/b c.txt"}, false},
		{"rename keeps the new path, skips the old", z("2 R. N... 100644 100644 100644 "+oid+" "+oid+" R100 new name", "old name", "? after"), "", []string{"new name", "after"}, false},
		{"unmerged", z("u UU N... 100644 100644 100644 100644 " + oid + " " + oid + " " + oid + " conflict.txt"), "", []string{"conflict.txt"}, false},
		{"untracked", z("? new/", "? f"), "", []string{"new/", "f"}, false},
		{"unknown record", z("x what"), "", nil, true},
		{"truncated record", z("1 .M N..."), "", nil, true},
		{"empty record", []byte("\x00\x00"), "", nil, true},
	} {
		st, err := parseStatus(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("%s: err = %v, want error %v", tc.name, err, tc.err)
			continue
		}
		if tc.err {
			continue
		}
		if st.branch != tc.branch || !reflect.DeepEqual(st.paths, tc.paths) {
			t.Errorf("%s: got branch %q paths %q, want %q %q", tc.name, st.branch, st.paths, tc.branch, tc.paths)
		}
	}
}
