package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

func TestMain(m *testing.M) { os.Exit(gittest.Main(m)) }

// manifest maps every path under root (except .git) to "kind mode
// content-hash" or "link -> target"; directories are listed too, so a
// missing or extra empty directory shows up.
func manifest(t testing.TB, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for rel, e := range gittest.Manifest(t, root, gittest.ManifestOptions{Dirs: true}) {
		switch e.Type {
		case fs.ModeSymlink:
			m[filepath.FromSlash(rel)] = "link -> " + e.Link
		case fs.ModeDir:
			m[filepath.FromSlash(rel)] = "dir"
		default:
			m[filepath.FromSlash(rel)] = fmt.Sprintf("file %v %s", e.Exec(), e.Hash[:16])
		}
	}
	return m
}

func diffManifests(a, b map[string]string) string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		if a[k] != b[k] {
			out = append(out, fmt.Sprintf("%q: want %q, got %q", k, a[k], b[k]))
		}
	}
	return strings.Join(out, "\n")
}

// gitState captures the bytes of everything a snapshot must never change:
// the real index, HEAD, refs (other than ours), packed-refs, reflogs, config.
func gitState(t testing.TB, gitDir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, name := range []string{"index", "HEAD", "config", "packed-refs", "ORIG_HEAD"} {
		if b, err := os.ReadFile(filepath.Join(gitDir, name)); err == nil {
			m[name] = b
		}
	}
	for _, dir := range []string{"refs", "logs"} {
		_ = filepath.WalkDir(filepath.Join(gitDir, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(gitDir, path)
			if strings.HasPrefix(rel, "refs/yolop/") {
				return nil
			}
			b, _ := os.ReadFile(path)
			m[rel] = b
			return nil
		})
	}
	return m
}

func sameState(t testing.TB, before, after map[string][]byte) {
	t.Helper()
	for k, v := range before {
		if w, ok := after[k]; !ok || !bytes.Equal(v, w) {
			t.Errorf("%s changed", k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s appeared", k)
		}
	}
}

// sh runs a shell script in dir (the changes an agent's bash tool makes).
func sh(t testing.TB, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sh %q: %v\n%s", script, err, out)
	}
}

func openEngine(t testing.TB, wt string) *Engine {
	t.Helper()
	e, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(e.Wait)
	return e
}

func capture(t testing.TB, e *Engine, name string) Snapshot {
	t.Helper()
	s, err := e.Capture(context.Background(), name)
	if err != nil {
		t.Fatalf("Capture(%q): %v", name, err)
	}
	return s
}
