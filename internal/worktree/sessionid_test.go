package worktree

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The rule validSessionID checks by hand, as a regular expression.
var sessionIDRule = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

func TestValidSessionIDIsTheRule(t *testing.T) {
	cases := []string{"", "a", "01JABC", "_x", "-x", "a_", "a-b", "a.b", "a/b", "a\n", "é",
		strings.Repeat("a", 128), strings.Repeat("a", 129)}
	alphabet := []byte("aZ09_-./\n é")
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		n := r.IntN(10)
		if r.IntN(50) == 0 {
			n = 124 + r.IntN(8)
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		if got, want := validSessionID(c), sessionIDRule.MatchString(c); got != want {
			t.Fatalf("validSessionID(%q) = %v, the rule says %v", c, got, want)
		}
	}
}
