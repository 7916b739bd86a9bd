package worktree

import (
	"testing"
)

// FuzzParseStatus: `git status --porcelain=v2 -z` output never panics the
// parser; on success every record yields a non-empty path, and on failure
// the caller treats the worktree as dirty (never "clean").
func FuzzParseStatus(f *testing.F) {
	f.Add([]byte("# branch.oid abc\x00# branch.head yolop/x\x001 .M N... 100644 100644 100644 aaa bbb a file.txt\x00"))
	f.Add([]byte("2 R. N... 100644 100644 100644 aaa bbb R100 new name\x00old name\x00? untracked\x00! ignored\x00"))
	f.Add([]byte("u UU N... 100644 100644 100644 100644 a b c conflict\x00"))
	f.Add([]byte("1 short\x00"))
	f.Add([]byte("x\x00\x00"))
	f.Fuzz(func(t *testing.T, out []byte) {
		st, err := parseStatus(out)
		if err != nil {
			return
		}
		for _, p := range st.paths {
			if p == "" {
				t.Fatal("empty path accepted")
			}
		}
	})
}
