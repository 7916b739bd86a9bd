package tools

import (
	"os"
	"testing"

	"github.com/yolop-dev/yolop/internal/spawn"
	"github.com/yolop-dev/yolop/internal/testenv"
)

// TestMain gives the shell an empty home directory: the login shell whose
// environment commands get sources the
// user's profile, whose contents (version managers, slow rehash locks) would
// otherwise make the tests depend on the machine they run on.
func TestMain(m *testing.M) {
	testenv.NoRaceExitSleep()
	spawn.Main()
	home, err := os.MkdirTemp("", "tools-home-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}
