package snapshot

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// knownCleanWorktree makes a repository whose tree holds what captures
// treat specially (an executable, a symlink, a tracked blocklisted
// directory, a submodule entry, an ignored file) and a linked worktree of
// it as a spare is: detached, checked out, its index refreshed by a status
// that found nothing. prep runs in the worktree before that status.
func knownCleanWorktree(t *testing.T, prep func(wt string)) (repo, wt string) {
	t.Helper()
	repo = gittest.NewRepo(t)
	gittest.WriteFile(t, repo, ".gitignore", "*.log\n")
	gittest.WriteFile(t, repo, "src/main.go", "package main\n")
	gittest.WriteFile(t, repo, "src/run.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(repo, "src/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src/main.go", filepath.Join(repo, "link")); err != nil {
		t.Fatal(err)
	}
	gittest.WriteFile(t, repo, "node_modules/pkg/index.js", "module.exports = 1\n")
	gittest.WriteFile(t, repo, "vendor/lib/x.go", "package lib\n")
	head := gittest.Commit(t, repo, "tree")
	gittest.Git(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+head+",sub")
	gittest.Git(t, repo, "commit", "-q", "-m", "submodule entry")
	wt = filepath.Join(t.TempDir(), "wt")
	gittest.Git(t, repo, "worktree", "add", "--quiet", "--detach", wt)
	gittest.WriteFile(t, wt, "debug.log", "ignored\n")
	if err := os.Chmod(filepath.Join(wt, "src/main.go"), 0o600); err != nil {
		t.Fatal(err)
	}
	if prep != nil {
		prep(wt)
	}
	if out := gittest.Git(t, wt, "status", "--porcelain", "--untracked-files=all"); out != "" {
		t.Fatalf("the worktree is not clean for the test:\n%s", out)
	}
	return repo, wt
}

func openKnownClean(t *testing.T, wt string, known bool) *Engine {
	t.Helper()
	e, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state"), SeedSettled: true, KnownClean: known})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Wait)
	return e
}

// TestKnownCleanFirstCaptureEqualsAFreshOne: a first capture that takes its
// tree from a seed known clean, without a status, yields exactly the tree
// (and the permission record) of an ordinary first capture of the same
// worktree, blocklisted paths and submodules left out alike; where the
// seed could not stand for the worktree (flags hiding an edit, a file mode
// git is told to ignore, a nested repository, content conversion), it runs
// the ordinary capture and still agrees. The next capture sees an edit.
func TestKnownCleanFirstCaptureEqualsAFreshOne(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		prep   func(t *testing.T, repo, wt string)
		derive bool
	}{
		{"clean", nil, true},
		{"assume-unchanged edit", func(t *testing.T, repo, wt string) {
			gittest.Git(t, wt, "update-index", "--assume-unchanged", "src/main.go")
			gittest.WriteFile(t, wt, "src/main.go", "package main // edited\n")
		}, false},
		{"skip-worktree file gone", func(t *testing.T, repo, wt string) {
			gittest.Git(t, wt, "update-index", "--skip-worktree", "src/main.go")
			if err := os.Remove(filepath.Join(wt, "src/main.go")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"fileMode off", func(t *testing.T, repo, wt string) {
			gittest.Git(t, repo, "config", "core.fileMode", "false")
			if err := os.Chmod(filepath.Join(wt, "src/run.sh"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"fileMode on, spelled yes", func(t *testing.T, repo, wt string) {
			gittest.Git(t, repo, "config", "core.fileMode", "yes")
		}, true},
		{"ctime not trusted", func(t *testing.T, repo, wt string) {
			gittest.Git(t, repo, "config", "core.trustCtime", "false")
		}, false},
		{"minimal stat check", func(t *testing.T, repo, wt string) {
			gittest.Git(t, repo, "config", "core.checkStat", "minimal")
		}, false},
		{"nested repository", func(t *testing.T, repo, wt string) {
			if err := os.Mkdir(filepath.Join(wt, "vendor/lib/.git"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"tracked attributes", func(t *testing.T, repo, wt string) {
			gittest.WriteFile(t, repo, "src/.gitattributes", "*.go text eol=crlf\n")
			gittest.Git(t, repo, "add", "src/.gitattributes")
			gittest.Git(t, repo, "commit", "-q", "-m", "attributes")
			gittest.Git(t, wt, "checkout", "-q", "--detach", "main")
		}, false},
		{"attributes", func(t *testing.T, repo, wt string) {
			if err := os.WriteFile(filepath.Join(repo, ".git", "info", "attributes"), []byte("*.go text\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var repo string
			_, wt := knownCleanWorktree(t, func(wt string) {
				if c.prep != nil {
					common := gittest.Git(t, wt, "rev-parse", "--path-format=absolute", "--git-common-dir")
					repo = filepath.Dir(common)
					c.prep(t, repo, wt)
				}
			})
			fresh := openKnownClean(t, wt, false)
			known := openKnownClean(t, wt, true)
			want := capture(t, fresh, "a")
			got := capture(t, known, "a")
			if got.Tree != want.Tree {
				t.Fatalf("first capture known clean = %s, ordinary = %s", got.Tree, want.Tree)
			}
			if n := known.derivedCaptures; (n == 1) != c.derive {
				t.Fatalf("derived captures = %d, want derived = %v", n, c.derive)
			}
			if fresh.derivedCaptures != 0 {
				t.Fatal("an engine not told the worktree is clean derived a capture")
			}
			if !reflect.DeepEqual(known.lastWalk.modes, fresh.lastWalk.modes) {
				t.Fatalf("permission record known clean = %v, ordinary = %v", known.lastWalk.modes, fresh.lastWalk.modes)
			}
			if c.name == "clean" {
				if ls := gittest.Git(t, wt, "ls-tree", "-r", "--name-only", got.Tree); ls != ".gitignore\nREADME.md\nlink\nsrc/main.go\nsrc/run.sh\nvendor/lib/x.go" {
					t.Fatalf("derived tree holds:\n%s", ls)
				}
				if known.lastWalk.modes["src/main.go"] != 0o600 {
					t.Fatalf("the 0600 file is not in the permission record: %v", known.lastWalk.modes)
				}
			}
			gittest.WriteFile(t, wt, "src/new.go", "package main\n")
			want2, got2 := capture(t, fresh, "b"), capture(t, known, "b")
			if got2.Tree == got.Tree || got2.Tree != want2.Tree {
				t.Fatalf("capture after an edit: known clean %s (first %s), ordinary %s", got2.Tree, got.Tree, want2.Tree)
			}
			// A private index rebuilt later is never seeded on the old proof.
			known.Wait()
			if err := known.removeIndex(); err != nil {
				t.Fatal(err)
			}
			derived := known.derivedCaptures
			if got3 := capture(t, known, "c"); got3.Tree != want2.Tree || known.derivedCaptures != derived {
				t.Fatalf("capture on a rebuilt index: %s (want %s), derived %d -> %d", got3.Tree, want2.Tree, derived, known.derivedCaptures)
			}
		})
	}
}

// TestKnownWalkStandsForTheFirstCapturesWalk: with the walk made when the
// worktree was parked, a known-clean first capture walks nothing, yet
// records the same permissions as an ordinary capture: those the earlier
// walk saw, and those changed since (found by the inode times the claim's
// status refreshed). A nested repository appearing since makes it walk.
func TestKnownWalkStandsForTheFirstCapturesWalk(t *testing.T) {
	t.Parallel()
	for _, nested := range []bool{false, true} {
		t.Run(fmt.Sprintf("nested=%v", nested), func(t *testing.T) {
			t.Parallel()
			var note Walk
			_, wt := knownCleanWorktree(t, func(wt string) {
				time.Sleep(walkSlack + 100*time.Millisecond)
				note = WalkTree(wt)
				if err := os.Chmod(filepath.Join(wt, "src/run.sh"), 0o700); err != nil {
					t.Fatal(err)
				}
				if nested {
					if err := os.Mkdir(filepath.Join(wt, "vendor/lib/.git"), 0o755); err != nil {
						t.Fatal(err)
					}
				}
			})
			if note.Modes["src/main.go"] != 0o600 || note.Modes["src/run.sh"] != 0 {
				t.Fatalf("the parking walk saw %v", note.Modes)
			}
			fresh := openKnownClean(t, wt, false)
			known, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state"), SeedSettled: true, KnownClean: true, KnownWalk: &note})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(known.Wait)
			want, got := capture(t, fresh, "a"), capture(t, known, "a")
			if got.Tree != want.Tree {
				t.Fatalf("tree %s, ordinary %s", got.Tree, want.Tree)
			}
			if !reflect.DeepEqual(known.lastWalk.modes, fresh.lastWalk.modes) {
				t.Fatalf("permission record %v, ordinary %v", known.lastWalk.modes, fresh.lastWalk.modes)
			}
			if want := map[string]fs.FileMode{"src/main.go": 0o600, "src/run.sh": 0o700}; !reflect.DeepEqual(known.lastWalk.modes, want) {
				t.Fatalf("permission record %v, want %v", known.lastWalk.modes, want)
			}
			if n := known.noteWalks; (n == 1) == nested {
				t.Fatalf("captures walked from the note: %d (nested repository: %v)", n, nested)
			}
		})
	}
}
