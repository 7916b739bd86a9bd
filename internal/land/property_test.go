package land

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestApplyProperty edits both sides at random, applies (conflict markers
// on), and checks: every path that was not renamed holds what `git
// merge-file` (or the trivial one-sided rule) gives, conflicts are
// reported as such, and undo returns the checkout byte for byte.
// LAND_PROPERTY_N sets the number of seeds (default 6).
func TestApplyProperty(t *testing.T) {
	n := 6
	if v, err := strconv.Atoi(os.Getenv("LAND_PROPERTY_N")); err == nil && v > 0 {
		n = v
	}
	if testing.Short() {
		n = 2
	}
	for seed := int64(1); seed <= int64(n); seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { propertyOnce(t, seed) })
	}
}

func randLines(rng *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("line-%08x-%08x", rng.Uint32(), rng.Uint32())
	}
	return out
}

func join(ls []string) string { return strings.Join(ls, "\n") + "\n" }

// mutate edits one line-based file: change, insert or delete a few lines in
// one region of the file (so that the two sides often touch different
// regions and sometimes the same).
func mutate(rng *rand.Rand, content string) string {
	ls := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	at := rng.Intn(len(ls))
	switch rng.Intn(3) {
	case 0:
		ls[at] = fmt.Sprintf("edited-%08x", rng.Uint32())
	case 1:
		ls = append(ls[:at], append(randLines(rng, 1+rng.Intn(2)), ls[at:]...)...)
	default:
		if len(ls) > 2 {
			ls = append(ls[:at], ls[at+1:]...)
		}
	}
	return join(ls)
}

func propertyOnce(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	files := map[string]string{}
	for i := 0; i < 12; i++ {
		files[fmt.Sprintf("f%02d.txt", i)] = join(randLines(rng, 30))
	}
	files["dir/sub.txt"] = join(randLines(rng, 30))
	r := newRig(t, files)
	wt, co := r.sess.Worktree, r.checkout
	renamed := map[string]bool{}
	side := func(dir string, user bool) {
		for p := range files {
			if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
				continue
			}
			switch k := rng.Intn(10); {
			case k < 4:
				write(t, dir, p, mutate(rng, read(t, dir, p)))
			case k == 4:
				remove(t, dir, p)
			case k == 5 && !user && !renamed[p]:
				dst := "moved-" + filepath.Base(p)
				if err := os.Rename(filepath.Join(dir, p), filepath.Join(dir, dst)); err != nil {
					t.Fatal(err)
				}
				renamed[p], renamed[dst] = true, true
			}
		}
		for i := 0; i < rng.Intn(3); i++ {
			who := "s"
			if user {
				who = "u"
			}
			write(t, dir, fmt.Sprintf("new-%s%d.txt", who, i), join(randLines(rng, 5)))
		}
	}
	side(wt, false)
	side(co, true)
	if rng.Intn(2) == 0 {
		// The user's branch moves on with part of their edits.
		gittest.Git(t, co, "add", "-A", "--", "f0*")
		gittest.Git(t, co, "commit", "-q", "--allow-empty", "-m", "user")
	}
	before := manifest(t, co)
	state := gitState(t, co)
	baseDir := t.TempDir()
	for p, c := range files {
		write(t, baseDir, p, c)
	}
	userDir := t.TempDir()
	copyTree(t, co, userDir)

	res, err := Apply(ctx, r.sess, ApplyOptions{OnConflict: OnConflictMarkers})
	if err != nil && !errors.Is(err, ErrConflict) {
		t.Fatal(err)
	}
	got := outcomes(res)
	all := map[string]bool{}
	for _, m := range []map[string]string{manifest(t, baseDir), manifest(t, userDir), manifest(t, wt)} {
		for p, k := range m {
			if k != "dir" {
				all[p] = true
			}
		}
	}
	for p := range all {
		if renamed[p] {
			continue
		}
		b, bok := readOpt(baseDir, p)
		u, uok := readOpt(userDir, p)
		s, sok := readOpt(wt, p)
		want, wok, conflict := "", false, false
		switch {
		case bok && uok && sok:
			out, err := mergeFile(t, u, b, s)
			if err != nil {
				conflict = true
			} else {
				want, wok = out, true
			}
		case !bok:
			switch {
			case uok && sok && u != s:
				conflict = true
			case uok:
				want, wok = u, true
			case sok:
				want, wok = s, true
			}
		case !uok && !sok:
		case !uok: // user deleted
			if s != b {
				conflict = true
			}
		case !sok: // session deleted
			if u != b {
				conflict = true
			}
		}
		if conflict {
			if got[p] != OutcomeConflict {
				t.Errorf("%s: outcome %q, want conflict", p, got[p])
			}
			continue
		}
		if got[p] == OutcomeConflict {
			t.Errorf("%s: reported as a conflict, merge-file merges it", p)
			continue
		}
		have, hok := readOpt(co, p)
		if hok != wok || have != want {
			t.Errorf("%s: apply gave (%v) %q, merge-file (%v) %q", p, hok, git.ShortOID(have), wok, git.ShortOID(want))
		}
	}
	if gitState(t, co) != state {
		t.Fatal("apply changed HEAD, refs, index or config")
	}
	if res.Conflicts == 0 {
		// Applying twice is harmless.
		again, err := Apply(ctx, r.sess, ApplyOptions{})
		if err != nil || again.Written != 0 {
			t.Fatalf("second apply: %v %+v", err, again)
		}
	}
	if res.UndoRef != "" {
		if _, err := Undo(ctx, r.sess, UndoOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if d := diffManifests(before, manifest(t, co)); d != "" {
		t.Fatalf("apply + undo is not byte-exact:\n%s", d)
	}
}

func readOpt(dir, p string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dir, p))
	return string(b), err == nil
}

func mergeFile(t *testing.T, ours, base, theirs string) (string, error) {
	dir := t.TempDir()
	for n, c := range map[string]string{"o": ours, "b": base, "t": theirs} {
		os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644)
	}
	out, err := exec.Command("git", "merge-file", "-p", filepath.Join(dir, "o"), filepath.Join(dir, "b"), filepath.Join(dir, "t")).Output()
	return string(out), err
}

func copyTree(t *testing.T, from, to string) {
	for p, k := range manifest(t, from) {
		if strings.HasPrefix(k, "file") {
			write(t, to, p, read(t, from, p))
		}
	}
}
