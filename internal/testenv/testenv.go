// Package testenv is what the tests that start yolop processes share: the
// race runtime's exit sleep turned off for them, and the yolop binary they
// run; what tests count of their own process (inotify instances); and
// whether a spare preparation still runs.
// Only tests import it.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BinEnv names a built yolop binary (an absolute path) that the end-to-end
// tests run instead of building their own; .ci/run sets it to the binary
// it has just built from the same tree.
const BinEnv = "YOLOP_BIN"

// NoRaceExitSleep turns off the race runtime's sleep at exit in the
// processes the tests start from now on: by default a race-built process
// sleeps atexit_sleep_ms=1000 before it exits, and the tests start the
// race-built test binary again and again (as the tools' spawn helper, as
// yolop in the scripts, as a crash child). A TestMain calls it first. The
// process calling it has read $GORACE already; its children inherit the
// change. An atexit_sleep_ms already in $GORACE is kept, and so are the
// other options there.
func NoRaceExitSleep() {
	v := os.Getenv("GORACE")
	if strings.Contains(v, "atexit_sleep_ms=") {
		return
	}
	if err := os.Setenv("GORACE", strings.TrimSpace(v+" atexit_sleep_ms=0")); err != nil {
		panic(err)
	}
}

// Yolop returns the yolop binary for end-to-end tests: $YOLOP_BIN when it
// is set, else one built now into dir (a build takes seconds; .ci/run has
// built one already). Both are built without the race detector, as users
// run it.
func Yolop(dir string) (string, error) {
	if bin := os.Getenv(BinEnv); bin != "" {
		if !filepath.IsAbs(bin) {
			return "", fmt.Errorf("%s=%q: want the absolute path of a built yolop (go build -o bin/yolop ./cmd/yolop; %s=$PWD/bin/yolop), or unset it to build one for the tests", BinEnv, bin, BinEnv)
		}
		st, err := os.Stat(bin)
		if err != nil {
			return "", fmt.Errorf("%s: %w (build it with go build -o %s ./cmd/yolop, or unset %s)", BinEnv, err, bin, BinEnv)
		}
		if !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s=%s: not an executable file (build it with go build -o %s ./cmd/yolop, or unset %s)", BinEnv, bin, bin, BinEnv)
		}
		return bin, nil
	}
	bin := filepath.Join(dir, "yolop")
	// With the caller's environment: its module and build caches live
	// under the real HOME.
	out, err := exec.Command("go", "build", "-o", bin, "github.com/yolop-dev/yolop/cmd/yolop").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build yolop: %w\n%s", err, out)
	}
	return bin, nil
}

// ScriptYolop returns, when $YOLOP_BIN is set, a program for the command
// line's scripts to run as yolop: it runs $YOLOP_BIN and records its exit
// status for the scripts' exitcode command (see yolopexit), built now into
// dir. It returns "" when $YOLOP_BIN is not set: the scripts then run the
// test binary itself as yolop.
func ScriptYolop(dir string) (string, error) {
	if os.Getenv(BinEnv) == "" {
		return "", nil
	}
	// The same checks of $YOLOP_BIN as every end-to-end test's.
	yolop, err := Yolop(dir)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "yolop")
	out, err := exec.Command("go", "build", "-o", bin, "-ldflags", "-X main.bin="+yolop, "github.com/yolop-dev/yolop/internal/testenv/yolopexit").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build the scripts' yolop: %w\n%s", err, out)
	}
	return bin, nil
}
