// Package synth generates deterministic synthetic git work trees for the
// snapshot benchmarks: N tracked files in dNNN/sNN/fNNNNNN.txt (50 files per
// leaf directory, 20 leaf directories per top directory), a .gitignore for
// build/ and *.log with ignored files under both, committed, then dirtied:
// ~1% of tracked files modified (size changes), ~0.5% untracked files (half
// in existing directories, half in 10 new ones) and 10 tracked files deleted.
package synth

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/git"
)

var words = strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi " +
	"omicron pi rho sigma tau upsilon phi chi psi omega func return struct " +
	"import package var const if else for range nil err string int")

// Stats counts what Generate made.
type Stats struct{ Files, Modified, Untracked, Deleted int }

// Path returns the relative path of tracked file i.
func Path(i int) string { return fmt.Sprintf("d%03d/s%02d/f%06d.txt", i/1000, (i/50)%20, i) }

func text(r *rand.Rand) string {
	var b strings.Builder
	for range 4 + r.IntN(37) {
		n := 3 + r.IntN(8)
		for j := range n {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func write(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}

// Generate creates the repository in dir (which must not exist).
func Generate(ctx context.Context, dir string, n int, seed uint64) (Stats, error) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return Stats{}, err
	}
	g := git.New(dir)
	run := func(args ...string) error {
		_, err := g.Run(ctx, args...)
		return err
	}
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "bench"}, {"config", "user.email", "bench@example.invalid"}, {"config", "gc.auto", "0"}} {
		if err := run(a...); err != nil {
			return Stats{}, err
		}
	}
	for i := range n {
		if err := write(filepath.Join(dir, Path(i)), text(r)); err != nil {
			return Stats{}, err
		}
	}
	if err := write(filepath.Join(dir, ".gitignore"), "build/\n*.log\n"); err != nil {
		return Stats{}, err
	}
	for i := range 200 {
		if err := write(filepath.Join(dir, "build", fmt.Sprintf("o%04d.o", i)), text(r)); err != nil {
			return Stats{}, err
		}
	}
	for i := range 5 {
		if err := write(filepath.Join(dir, filepath.Dir(Path(i*997%n)), fmt.Sprintf("x%d.log", i)), "log\n"); err != nil {
			return Stats{}, err
		}
	}
	// Index written a second after the files: no racily-clean entries.
	time.Sleep(1100 * time.Millisecond)
	if err := run("add", "-A"); err != nil {
		return Stats{}, err
	}
	if err := run("commit", "-q", "-m", "base"); err != nil {
		return Stats{}, err
	}
	idx := r.Perm(n)
	st := Stats{Files: n, Modified: max(1, n/100), Untracked: max(1, n/200), Deleted: min(10, n/10)}
	for _, i := range idx[:st.Modified] {
		f, err := os.OpenFile(filepath.Join(dir, Path(i)), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return Stats{}, err
		}
		fmt.Fprintf(f, "modified line %d\n", i)
		f.Close()
	}
	for _, i := range idx[st.Modified : st.Modified+st.Deleted] {
		if err := os.Remove(filepath.Join(dir, Path(i))); err != nil {
			return Stats{}, err
		}
	}
	for j := range st.Untracked {
		var p string
		if j%2 == 0 {
			p = filepath.Join(filepath.Dir(Path(r.IntN(n))), fmt.Sprintf("new%05d.txt", j))
		} else {
			p = filepath.Join(fmt.Sprintf("newdir%02d", j%10), "sub", fmt.Sprintf("new%05d.txt", j))
		}
		if err := write(filepath.Join(dir, p), text(r)); err != nil {
			return Stats{}, err
		}
	}
	time.Sleep(1100 * time.Millisecond)
	return st, run("status", "--porcelain")
}
