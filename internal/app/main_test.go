package app_test

import (
	"os"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestMain gives the bash tool an empty home (`bash -l` reads the user's
// profile) and isolates git from the machine's configuration.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "app-home-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	code := gittest.Main(m)
	os.RemoveAll(home)
	os.Exit(code)
}
