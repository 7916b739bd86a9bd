package land

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/failpoint"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

func TestMain(m *testing.M) {
	if os.Getenv("LAND_CRASH_CHILD") != "" {
		os.Exit(crashChild())
	}
	os.Exit(gittest.Main(m))
}

// rig is a user's checkout and one session worktree of the same repository.
type rig struct {
	t        testing.TB
	checkout string
	data     string
	sess     Session
}

func newRig(t testing.TB, files map[string]string) *rig {
	t.Helper()
	repo := gittest.NewRepo(t)
	for p, c := range files {
		gittest.WriteFile(t, repo, p, c)
	}
	base := gittest.Commit(t, repo, "base")
	return attachSession(t, repo, base, "s_test")
}

func attachSession(t testing.TB, repo, base, id string) *rig {
	t.Helper()
	tmp := t.TempDir()
	wt := filepath.Join(tmp, "wt")
	gittest.Git(t, repo, "worktree", "add", "-q", "-b", "yolop/test-"+id, wt, base)
	wt, _ = filepath.EvalSymlinks(wt)
	eng, err := snapshot.Open(context.Background(), snapshot.Options{Worktree: wt, SessionID: id, StateDir: filepath.Join(tmp, "state"), Failpoint: failpoint.Hit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Wait)
	return &rig{t: t, checkout: repo, data: filepath.Join(tmp, "data"), sess: Session{
		ID: id, Title: "test session", Worktree: wt, Branch: "yolop/test-" + id, Base: base,
		Checkout: repo, Engine: eng, DataDir: filepath.Join(tmp, "data"), Prompts: []string{"first prompt", "second\nprompt"},
	}}
}

func write(t testing.TB, dir, rel, content string) {
	t.Helper()
	gittest.WriteFile(t, dir, rel, content)
}

func read(t testing.TB, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func remove(t testing.TB, dir, rel string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, rel)); err != nil {
		t.Fatal(err)
	}
}

// manifest maps every path under root except .git to its kind, exec bit
// and content hash (symlinks: their target); directories are listed too.
func manifest(t testing.TB, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if rel == "." {
			return nil
		}
		if rel == ".git" {
			return filepath.SkipDir
		}
		st, err := os.Lstat(path)
		if err != nil {
			return err
		}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			tgt, _ := os.Readlink(path)
			m[rel] = "link -> " + tgt
		case st.IsDir():
			m[rel] = "dir"
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			m[rel] = fmt.Sprintf("file %v %s", st.Mode().Perm()&0o111 != 0, hex.EncodeToString(sum[:8]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func diffManifests(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, fmt.Sprintf("%s: %q -> %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%s: missing -> %q", k, v))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// gitState is the user's HEAD, refs (except yolop's own) and real index,
// byte for byte.
func gitState(t testing.TB, repo string) string {
	t.Helper()
	head, _ := os.ReadFile(filepath.Join(repo, ".git", "HEAD"))
	idx, _ := os.ReadFile(filepath.Join(repo, ".git", "index"))
	sum := sha256.Sum256(idx)
	refs := gittest.Git(t, repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags")
	cfg, _ := os.ReadFile(filepath.Join(repo, ".git", "config"))
	return string(head) + "\n" + hex.EncodeToString(sum[:]) + "\n" + refs + "\n" + string(cfg)
}

func outcomes(r *ApplyResult) map[string]string {
	m := map[string]string{}
	for _, p := range r.Paths {
		m[p.Path] = p.Outcome
	}
	return m
}
