package demo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/cli/clitest"
)

// A go run build's binary is gone when it exits, and `go run ./cmd/yolop`
// works only in yolop's source tree: the advice names that tree.
func TestSelfCommandOfAGoRunBuild(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module github.com/yolop-dev/yolop\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(src, "cmd", "yolop")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "go-build123", "b001", "exe", "yolop")
	for _, wd := range []string{src, sub} {
		if cmd, goRun := selfCommandFor(exe, "", wd); cmd != "go -C "+src+" run ./cmd/yolop" || !goRun {
			t.Errorf("from %s: %q %v", wd, cmd, goRun)
		}
	}
	// Outside any source tree there is nothing better to say.
	if cmd, goRun := selfCommandFor(exe, "", t.TempDir()); cmd != "go run ./cmd/yolop" || !goRun {
		t.Errorf("outside the tree: %q %v", cmd, goRun)
	}
	// Another module's tree is not yolop's.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if cmd, _ := selfCommandFor(exe, "", other); cmd != "go run ./cmd/yolop" {
		t.Errorf("in another module: %q", cmd)
	}
	// An installed binary on PATH is "yolop".
	bin := filepath.Join(t.TempDir(), "yolop")
	if err := os.WriteFile(bin, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if cmd, goRun := selfCommandFor(bin, bin, src); cmd != "yolop" || goRun {
		t.Errorf("installed: %q %v", cmd, goRun)
	}
}

func TestNewCmdDemo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		argv string
		dir  string
		keep bool
		err  string
	}{
		{name: "a temporary directory", argv: ""},
		{name: "keep", argv: "--keep", keep: true},
		{name: "a directory", argv: "--dir /tmp/yolop-demo --keep", dir: "/tmp/yolop-demo", keep: true},
		{name: "dir without a directory", argv: "--dir", err: "usage: flag needs an argument: --dir"},
		{name: "an argument", argv: "tour", err: `usage: yolop demo takes no arguments, got "tour"`},
		{name: "unknown flag", argv: "--fast", err: "usage: unknown flag: --fast"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := clitest.Factory(t)
			o, err := clitest.Parse(f, "yolop", NewCmdDemo, tt.argv)
			if err != tt.err {
				t.Fatalf("error %q, want %q", err, tt.err)
			}
			if err == "" && (o.Dir != tt.dir || o.Keep != tt.keep || o.Ctx == nil) {
				t.Errorf("dir %q keep %v, want %q %v", o.Dir, o.Keep, tt.dir, tt.keep)
			}
		})
	}
}
