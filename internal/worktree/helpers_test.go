package worktree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

func TestMain(m *testing.M) {
	if data := os.Getenv(preparerEnv); data != "" {
		// The preparing process of turns_test.go, which a test kills.
		os.Exit(runPreparer(data, os.Getenv(preparerRepoEnv)))
	}
	if os.Getenv(sentinelEnv) != "" {
		// A preparation's sentinel kept running, which a test kills.
		runSentinelParent()
	}
	os.Exit(gittest.Main(m))
}

// detect is Detect that fails the test on error.
func detect(t *testing.T, dir string) *Repo {
	t.Helper()
	repo, err := Detect(context.Background(), dir)
	if err != nil {
		t.Fatalf("Detect(%s): %v", dir, err)
	}
	return repo
}

// create is Manager.Create that fails the test on error.
func create(t *testing.T, m *Manager, repo *Repo, sid, title string) Info {
	t.Helper()
	info, err := m.Create(context.Background(), repo, sid, title)
	if err != nil {
		t.Fatalf("Create(%s): %v", sid, err)
	}
	return info
}

// addCheckpointRef points refs/yolop/checkpoints/<sid>/<name> at HEAD's tree,
// like a snapshot would.
func addCheckpointRef(t *testing.T, dir, sid, name string) string {
	t.Helper()
	ref := RefPrefix + sid + "/" + name
	gittest.Git(t, dir, "update-ref", ref, gittest.Git(t, dir, "rev-parse", "HEAD^{tree}"))
	return ref
}

// allRefs is every ref with its value, one per line, sorted by name.
func allRefs(t *testing.T, dir string) []string {
	t.Helper()
	out := gittest.Git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// without drops the lines mentioning any of refs.
func without(lines []string, refs ...string) []string {
	var out []string
	for _, l := range lines {
		keep := true
		for _, r := range refs {
			if strings.Contains(l, r) {
				keep = false
			}
		}
		if keep {
			out = append(out, l)
		}
	}
	return out
}

// readFile returns the file's content, "" when it does not exist.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tree lists every path under root with its mode, and the SHA-256 of each
// file's content (or a symlink's target), so two calls compare the whole
// directory state.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		line := rel + " " + fi.Mode().String()
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:8])
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			line += " -> " + target
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func equalLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s changed:\n--- got\n%s\n--- want\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
