// Command snapbench times the snapshot engine against the `git status`
// floor on generated work trees and prints a Markdown table.
//
//	go run ./test/bench/cmd/snapbench [-runs 10] [-dir DIR] [-capture-only] [-watch] N...
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/test/bench/synth"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "snapbench:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("snapbench", flag.ContinueOnError)
	runs := fs.Int("runs", 10, "timed runs per measurement (the median is reported)")
	captureOnly := fs.Bool("capture-only", false, "time the floor and captures only, no restores")
	watchOnly := fs.Bool("watch", false, "time a long-lived host's turn with a file watcher (two captures) and the safety-net walk only")
	work := fs.String("dir", "", "directory for generated trees (default: a new temporary directory, removed afterwards)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sizes := []int{10000, 100000}
	if fs.NArg() > 0 {
		sizes = nil
		for _, a := range fs.Args() {
			n, err := strconv.Atoi(a)
			if err != nil || n < 100 {
				return fmt.Errorf("size %q: want a number of files >= 100", a)
			}
			sizes = append(sizes, n)
		}
	}
	base := *work
	if base == "" {
		d, err := os.MkdirTemp("", "snapbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		base = d
	}
	ctx := context.Background()
	v, err := git.CheckVersion(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "git %s, %d runs per row, median; ratio = median / median of `git status --porcelain --untracked-files=all`\n\n", v, *runs)
	fmt.Fprintln(stdout, "| files | measurement | median | ratio to floor | git CPU ratio |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|")
	for _, n := range sizes {
		rows, err := benchSize(ctx, base, n, *runs, *captureOnly, *watchOnly, stderr)
		if err != nil {
			return fmt.Errorf("%d files: %w", n, err)
		}
		floor := rows[0].d
		for _, r := range rows {
			f := floor
			if r.floor != 0 {
				f = r.floor
			}
			cpu := ""
			if r.cpu > 0 {
				cpu = fmt.Sprintf("%.2fx", r.cpu)
			}
			fmt.Fprintf(stdout, "| %d | %s | %s | %.2fx | %s |\n", n, r.name, fmtDur(r.d), float64(r.d)/float64(f), cpu)
		}
	}
	return nil
}

type row struct {
	name  string
	d     time.Duration
	floor time.Duration // the floor timed alternately with this row; 0: the floor row's
	cpu   float64       // git CPU time against the floor's, when timed alternately
}

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// timePaired is timeIt for f and the floor g alternately (setup, g, f in
// each run), so both see the same machine load; it returns both medians.
// timePaired returns the median wall time of f and of g, and the ratio of
// the medians of the git CPU time each used.
func timePaired(runs int, setup func(i int) error, g, f func() (time.Duration, error)) (time.Duration, time.Duration, float64, error) {
	var gs, gcpu, fcpu []time.Duration
	d, err := timeIt(runs, func(i int) error {
		if setup != nil {
			if err := setup(i); err != nil {
				return err
			}
		}
		dg, err := g()
		if i > 0 {
			gs = append(gs, dg)
			gcpu = append(gcpu, lastCPU)
		}
		return err
	}, func() (time.Duration, error) {
		d, err := f()
		fcpu = append(fcpu, lastCPU)
		return d, err
	})
	if err != nil {
		return 0, 0, 0, err
	}
	cpu := 0.0
	if g := median(gcpu); g > 0 {
		cpu = float64(median(fcpu[1:])) / float64(g)
	}
	return d, median(gs), cpu, nil
}

// timeIt runs setup (untimed) then f (timed) runs times after one warm-up.
func timeIt(runs int, setup func(i int) error, f func() (time.Duration, error)) (time.Duration, error) {
	var ds []time.Duration
	for i := 0; i <= runs; i++ {
		if setup != nil {
			if err := setup(i); err != nil {
				return 0, err
			}
		}
		d, err := f()
		if err != nil {
			return 0, err
		}
		if i > 0 {
			ds = append(ds, d)
		}
	}
	return median(ds), nil
}

// lastCPU is the CPU time (user + system) of the child processes reaped
// during the last timed call: the git processes it ran.
var lastCPU time.Duration

func childCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func timed(f func() error) func() (time.Duration, error) {
	return func() (time.Duration, error) {
		c := childCPU()
		t := time.Now()
		err := f()
		d := time.Since(t)
		lastCPU = childCPU() - c
		return d, err
	}
}

func benchSize(ctx context.Context, base string, n, runs int, captureOnly, watchOnly bool, log io.Writer) ([]row, error) {
	dir := filepath.Join(base, fmt.Sprintf("synth-%d", n))
	fmt.Fprintf(log, "generating %d files in %s\n", n, dir)
	if _, err := synth.Generate(ctx, dir, n, 42); err != nil {
		return nil, err
	}
	e, err := snapshot.Open(ctx, snapshot.Options{Worktree: dir, SessionID: "bench", StateDir: filepath.Join(base, fmt.Sprintf("state-%d", n))})
	if err != nil {
		return nil, err
	}
	g := git.New(dir)
	var rows []row
	add := func(name string, d time.Duration, err error) error {
		if err == nil {
			fmt.Fprintf(log, "%d files: %s: %s\n", n, name, fmtDur(d))
			rows = append(rows, row{name: name, d: d})
		}
		return err
	}
	status := timed(func() error {
		_, err := g.Run(ctx, "status", "--porcelain", "--untracked-files=all")
		return err
	})
	d, err := timeIt(runs, nil, status)
	if err := add("`git status --porcelain --untracked-files=all` (floor)", d, err); err != nil {
		return nil, err
	}
	// Captures are timed alternately with the floor and compared with it.
	paired := func(name string, setup func(i int) error, f func() (time.Duration, error)) error {
		d, fl, cpu, err := timePaired(runs, setup, status, f)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "%d files: %s: %s (floor alongside: %s, git CPU %.2fx)\n", n, name, fmtDur(d), fmtDur(fl), cpu)
		rows = append(rows, row{name + " (vs. the floor timed alternately)", d, fl, cpu})
		return nil
	}
	// First capture seeds the private index; then let it settle.
	if _, err := e.Capture(ctx, "seed"); err != nil {
		return nil, err
	}
	time.Sleep(1200 * time.Millisecond)
	if _, err := e.Capture(ctx, "settled"); err != nil {
		return nil, err
	}
	if watchOnly {
		// A TUI or ACP turn: the capture before it (nothing changed
		// since the last turn's) and the one after it (one file
		// written), the engine watching the tree; the setup waits for
		// the background index update so it never runs beside the floor.
		e.Watch(snapshot.WatchOptions{Resync: -1})
		defer e.Close()
		if err := e.WaitWatching(ctx); err != nil {
			return nil, err
		}
		if _, err := e.Capture(ctx, "armed"); err != nil { // walks once
			return nil, err
		}
		one := filepath.Join(dir, synth.Path(n/2))
		i := 0
		turn := timed(func() error {
			if _, err := e.Capture(ctx, "before"); err != nil {
				return err
			}
			i++
			if err := os.WriteFile(one, []byte("turn "+strconv.Itoa(i)+"\n"), 0o644); err != nil {
				return err
			}
			_, err := e.Capture(ctx, "after")
			return err
		})
		if err := paired("watched turn: capture before + 1 file written + capture after", func(int) error { e.Wait(); return nil }, turn); err != nil {
			return nil, err
		}
		if err := paired("safety-net walk (Engine.Resync)", func(int) error { e.Wait(); return nil }, timed(func() error { return e.Resync(ctx) })); err != nil {
			return nil, err
		}
		if st := e.WatchState(); st.Walked != 2+1+runs+1 || st.Watched < 2*(runs+1) {
			return nil, fmt.Errorf("the watcher did not vouch as expected: %+v", st)
		}
		return rows, nil
	}
	if err := paired("capture, nothing changed", nil, timed(func() error { _, err := e.Capture(ctx, "c"); return err })); err != nil {
		return nil, err
	}
	one := filepath.Join(dir, synth.Path(n/2))
	// A capture answered by a tree edit leaves the private index to catch
	// up in the background; the setup (untimed) waits for it so that it
	// never runs beside the floor or the next capture. The second row
	// times the capture together with that background work.
	change := func(i int) error {
		e.Wait()
		return os.WriteFile(one, []byte("one change "+strconv.Itoa(i)+"\n"), 0o644)
	}
	if err := paired("capture, 1 file changed", change,
		timed(func() error { _, err := e.Capture(ctx, "c"); return err })); err != nil {
		return nil, err
	}
	if err := paired("capture, 1 file changed, with its background index update", change,
		timed(func() error { _, err := e.Capture(ctx, "c"); e.Wait(); return err })); err != nil {
		return nil, err
	}
	e.Wait()
	if captureOnly {
		return rows, nil
	}
	target, err := e.Capture(ctx, "target")
	if err != nil {
		return nil, err
	}
	for _, k := range []int{1, 10, 100, 1000} {
		if k > n/2 {
			break
		}
		var cur snapshot.Snapshot
		var applies []time.Duration
		d, err := timeIt(runs, func(i int) error {
			for j := 0; j < k; j++ {
				p := filepath.Join(dir, synth.Path((j*7919+13)%n))
				if err := os.WriteFile(p, []byte(fmt.Sprintf("restore bench %d %d\n", i, j)), 0o644); err != nil && !os.IsNotExist(err) {
					return err
				}
			}
			var err error
			cur, err = e.Capture(ctx, "")
			e.Wait()
			return err
		}, func() (time.Duration, error) {
			t := time.Now()
			res, err := e.Restore(ctx, cur, target.Tree)
			applies = append(applies, res.ApplyTime)
			return time.Since(t), err
		})
		if err := add(fmt.Sprintf("restore %d changed paths (incl. verify)", k), d, err); err != nil {
			return nil, err
		}
		// The file system's own cost for the same writes, no git at all.
		d, err = timeIt(runs, nil, timed(func() error { return rawWrites(dir, n, k) }))
		if err := add(fmt.Sprintf("file system only: %d temp-file writes + renames", k), d, err); err != nil {
			return nil, err
		}
		if err := add(fmt.Sprintf("restore %d changed paths, apply only", k), median(applies[1:]), nil); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// rawWrites replaces k files the way a restore does (temp file + rename);
// the next restore measurement puts their content back.
func rawWrites(dir string, n, k int) error {
	for j := 0; j < k; j++ {
		p := filepath.Join(dir, synth.Path((j*7919+13)%n))
		tmp := p + ".fsfloor"
		if err := os.WriteFile(tmp, []byte("floor\n"), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, p); err != nil {
			return err
		}
	}
	return nil
}
