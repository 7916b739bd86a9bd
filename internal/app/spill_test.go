package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
)

// A conversation-only session started in a directory that contains the
// data directory (yolop run in $HOME with the default data dir) must work:
// command output beyond the caps spills outside the working directory. A
// session with file checkpoints there is refused before anything is made.
func TestSessionAboveItsDataDir(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	data := filepath.Join(home, ".local", "share", "yolop")
	f, err := Open(ctx, Env{DataDir: data, Dir: home, Provider: provider.Config{Provider: provider.NameSim}}, New{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Prompt(ctx, "write x.txt", nil)
	var ce *checkpoint.Error
	if !errors.As(err, &ce) || ce.Code != string(fault.DataDirInFolder) {
		t.Fatalf("a folder session above its data directory: %v, want %s", err, fault.DataDirInFolder)
	}
	f.Close()
	if list, err := session.List(data); err != nil || len(list) != 0 {
		t.Fatalf("the refusal left sessions behind: %+v %v", list, err)
	}
	s, err := Open(ctx, Env{DataDir: data, Dir: home, Provider: provider.Config{Provider: provider.NameSim}}, New{Mode: config.WorkspaceNone})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Prompt(ctx, "$ seq 1 20000 > big.txt && cat big.txt", nil)
	if err != nil || res.Status != "completed" {
		t.Fatalf("turn: %v %+v", err, res)
	}
	if _, err := os.Stat(filepath.Join(home, "big.txt")); err != nil {
		t.Fatal(err)
	}
	in := s.Info()
	if in.Workspace || !strings.Contains(in.WorkspaceReason, "--workspace none") {
		t.Fatalf("info = %+v", in)
	}
}

// A session whose parts cannot be opened is not left behind half made.
func TestFailedCreationLeavesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	data := filepath.Join(t.TempDir(), "data")
	s, err := Open(ctx, Env{DataDir: data, Dir: dir, Provider: provider.Config{Provider: provider.NameSim}}, New{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The active root vanishes between Open and the first prompt.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(ctx, "hello", nil); err == nil {
		t.Fatal("a prompt in a deleted directory succeeded")
	}
	list, err := session.List(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Fatalf("a failed creation left %d sessions behind: %+v", len(list), list)
	}
}
