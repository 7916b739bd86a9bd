package snapshot

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The rule validName checks by hand, as a regular expression.
var nameRule = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

func nameByRule(s string) bool {
	return nameRule.MatchString(s) && !strings.Contains(s, "..") && !strings.HasSuffix(s, ".lock") && !strings.HasSuffix(s, ".")
}

func TestValidNameIsTheRule(t *testing.T) {
	cases := []string{"", "a", "cp1", "end-cp12", "_x", ".x", "-x", "a.", "a..b", "a.lock", "a.locks", "a/b", "a b",
		"a\n", "a\x00", "é", strings.Repeat("a", 128), strings.Repeat("a", 129), "01J" + strings.Repeat("Z", 125)}
	alphabet := []byte("aZ09_.-/ \n\x00é")
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		n := r.IntN(12)
		if r.IntN(50) == 0 {
			n = 120 + r.IntN(12)
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		if got, want := validName(c), nameByRule(c); got != want {
			t.Fatalf("validName(%q) = %v, the rule says %v", c, got, want)
		}
	}
}
