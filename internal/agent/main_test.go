package agent

import (
	"os"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestMain gives the bash tool an empty home directory (`bash -l` reads the
// user's profile, which must not make these tests depend on the machine) and
// isolates git from the developer's configuration.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "agent-home-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	code := gittest.Main(m)
	os.RemoveAll(home)
	os.Exit(code)
}
