package git

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

func TestIsOIDIsTheRule(t *testing.T) {
	rule := regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte("0123456789abcdefABg\n")
	for range 20000 {
		n := []int{39, 40, 41, 63, 64, 65, 0, 20}[r.IntN(8)]
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(16)]
			if r.IntN(200) == 0 {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
		}
		if got, want := IsOID(string(b)), rule.MatchString(string(b)); got != want {
			t.Fatalf("IsOID(%q) = %v, the rule says %v", b, got, want)
		}
	}
}
