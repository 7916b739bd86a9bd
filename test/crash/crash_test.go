// Package crash kills the real yolop binary at every failpoint of turn
// bracketing and restore, reopens the session and proves the result is a
// consistent (conversation head, workspace) pair with no written byte lost.
//
//	go test ./test/crash -v -run TestCrashAtEveryFailpoint
package crash

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/yolop-dev/yolop/internal/failpoint"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/testenv"
)

var (
	bin     string // the built yolop binary
	baseEnv []string
)

func TestMain(m *testing.M) {
	if os.Getenv(mcpServerEnv) != "" {
		os.Exit(mcpServer())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "yolop-crash-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	// Before HOME moves: a build needs the caller's module and build caches.
	if bin, err = testenv.Yolop(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	gittest.IsolateProcess(dir)
	baseEnv = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir(), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.Getenv("GIT_CONFIG_GLOBAL"), "LANG=C.UTF-8",
		// No background spare preparation unless a test asks for it.
		"YOLOP_WORKTREE_SPARES=0"}
	return m.Run()
}

// snapshotFailpoints are the snapshot engine's restore steps; the app wires
// snapshot.Failpoint to failpoint.Hit.
var snapshotFailpoints = []string{"restore.after_write", "restore.after_delete", "restore.before_verify"}

func allFailpoints() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range append(append([]string(nil), failpoint.Names...), snapshotFailpoints...) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// env is one user's machine: a repository and a yolop data dir.
type env struct {
	t    *testing.T
	repo string
	data string
	sid  string
	root string // the session worktree
	// extra is added to every yolop process's environment.
	extra []string
}

type result struct {
	stdout, stderr string
	code           int
	killed         bool
}

func (e *env) yolop(fp string, args ...string) result {
	e.t.Helper()
	cmd := exec.Command(bin, append([]string{"--provider", "sim", "--output-format", "json"}, args...)...)
	cmd.Dir = e.repo
	cmd.Env = append(append(append([]string(nil), baseEnv...), "YOLOP_DATA_DIR="+e.data), e.extra...)
	if fp != "" {
		cmd.Env = append(cmd.Env, failpoint.Env+"="+fp)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ws := ee.Sys().(syscall.WaitStatus)
		res.killed = ws.Signaled() && ws.Signal() == syscall.SIGKILL
		res.code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("run yolop %v: %v", args, err)
	}
	return res
}

// ok runs yolop and decodes its one JSON object, failing on a non-zero exit.
func (e *env) ok(args ...string) map[string]json.RawMessage {
	e.t.Helper()
	r := e.yolop("", args...)
	if r.code != 0 {
		e.t.Fatalf("yolop %q: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		e.t.Fatalf("yolop %q: output %q: %v", args, r.stdout, err)
	}
	return m
}

func str(m map[string]json.RawMessage, k string) string {
	var s string
	_ = json.Unmarshal(m[k], &s)
	return s
}

func (e *env) turn(prompt string) {
	e.t.Helper()
	var m map[string]json.RawMessage
	if e.sid == "" {
		m = e.ok("-p", prompt)
		e.sid, e.root = str(m, "session_id"), str(m, "active_root")
	} else {
		m = e.ok("--session", e.sid, "-p", prompt)
	}
	if st := str(m, "status"); st != "completed" {
		e.t.Fatalf("turn %q: %s", prompt, st)
	}
}

type row struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// list reopens the session with the binary (which repairs it) and returns
// the active branch, newest first.
func (e *env) list() []row {
	e.t.Helper()
	m := e.ok("--session", e.sid, "-p", "/rewind")
	var rows []row
	if err := json.Unmarshal(m["checkpoints"], &rows); err != nil {
		e.t.Fatal(err)
	}
	return rows
}

func head(rows []row) string {
	if len(rows) == 0 {
		return ""
	}
	return rows[0].ID
}

// restore previews and confirms a slash command with the binary.
func (e *env) restore(cmd string) {
	e.t.Helper()
	p := e.ok("--session", e.sid, "-p", cmd)
	tok := str(p, "token")
	e.ok("--session", e.sid, "-p", cmd+" --confirm "+tok)
}

type file struct {
	mode fs.FileMode
	data []byte
}

// files reads every file and symlink of the worktree except .git: what a
// snapshot promises to restore (type, executable bit, bytes).
func (e *env) files() map[string]file {
	e.t.Helper()
	m := map[string]file{}
	for rel, g := range gittest.Manifest(e.t, e.root, gittest.ManifestOptions{}) {
		f := file{mode: g.Type | 0o644, data: g.Data}
		if g.Exec() {
			f.mode |= 0o111
		}
		if g.Type == fs.ModeSymlink {
			f.data = []byte(g.Link)
		}
		m[rel] = f
	}
	return m
}

func diff(want, got map[string]file) []string {
	var d []string
	for p, w := range want {
		g, ok := got[p]
		if !ok {
			d = append(d, "missing "+p)
		} else if g.mode != w.mode || !bytes.Equal(g.data, w.data) {
			d = append(d, "changed "+p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			d = append(d, "extra "+p)
		}
	}
	sort.Strings(d)
	return d
}

// gitState is what nothing may change: the worktree's HEAD and real index,
// the user's HEAD, branches and real index.
func (e *env) gitState() string {
	e.t.Helper()
	idx := gittest.Git(e.t, e.root, "rev-parse", "--path-format=absolute", "--git-path", "index")
	sum := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			e.t.Fatal(err)
		}
		h := sha256.Sum256(b)
		return hex.EncodeToString(h[:])
	}
	return strings.Join([]string{
		gittest.Git(e.t, e.root, "rev-parse", "HEAD"),
		sum(idx),
		gittest.Git(e.t, e.repo, "rev-parse", "HEAD"),
		gittest.Git(e.t, e.repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags"),
		sum(filepath.Join(e.repo, ".git", "index")),
	}, "\n")
}

// refTrees lists the blobs of every snapshot ref of the session:
// "<ref>:<path>" -> blob id.
func (e *env) refBlobs() map[string]map[string]string {
	e.t.Helper()
	out := map[string]map[string]string{}
	refs := gittest.Git(e.t, e.root, "for-each-ref", "--format=%(refname)", snapshot.RefPrefix+e.sid+"/")
	for _, ref := range strings.Fields(refs) {
		blobs := map[string]string{}
		for _, l := range strings.Split(gittest.Git(e.t, e.root, "ls-tree", "-r", "--full-tree", ref), "\n") {
			meta, path, ok := strings.Cut(l, "\t")
			if !ok {
				continue
			}
			f := strings.Fields(meta)
			blobs[path] = f[2]
		}
		out[ref] = blobs
	}
	return out
}

func (e *env) blobID(data []byte) string {
	cmd := exec.Command("git", "hash-object", "--stdin")
	cmd.Dir = e.root
	cmd.Env = append(os.Environ(), "GIT_DIR="+gittest.Git(e.t, e.root, "rev-parse", "--absolute-git-dir"))
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// lost returns every written file whose bytes are neither in the worktree
// nor, at the same path, in a snapshot ref (only in the refs named by
// inRefs, when given).
func (e *env) lost(written map[string]file, inRefs ...string) []string {
	e.t.Helper()
	cur := e.files()
	refs := e.refBlobs()
	var lost []string
	for p, f := range written {
		if g, ok := cur[p]; ok && bytes.Equal(g.data, f.data) {
			continue
		}
		id, found := e.blobID(f.data), false
		for ref, blobs := range refs {
			if len(inRefs) > 0 && !contains(inRefs, ref) {
				continue
			}
			if blobs[p] == id {
				found = true
				break
			}
		}
		if !found {
			lost = append(lost, p)
		}
	}
	sort.Strings(lost)
	return lost
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func merge(ms ...map[string]file) map[string]file {
	out := map[string]file{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// timelineHas reports whether timeline.jsonl holds a record of type typ
// whose reason contains reason.
func (e *env) timelineHas(typ, reason string) bool {
	b, err := os.ReadFile(filepath.Join(e.data, "sessions", e.sid, session.TimelineFile))
	if err != nil {
		e.t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		var r struct{ Type, Reason string }
		if json.Unmarshal([]byte(l), &r) == nil && r.Type == typ && strings.Contains(r.Reason, reason) {
			return true
		}
	}
	return false
}

// repairNotes reopens the session with the binary, as a user would after
// the crash, and returns the repair notes print mode reports (the "repairs"
// field of its JSON object). Opening runs the repair itself.
func (e *env) repairNotes() []string {
	e.t.Helper()
	m := e.ok("--session", e.sid, "-p", "/rewind")
	var notes []string
	if raw, ok := m["repairs"]; ok {
		if err := json.Unmarshal(raw, &notes); err != nil {
			e.t.Fatalf("repairs: %v", err)
		}
	}
	return notes
}

const (
	turn1 = "write a.txt\nalpha\nEOF\n$ printf 'bin\\000\\001' > data.bin && ln -s a.txt link && printf '#!/bin/sh\\n' > run.sh && chmod +x run.sh"
	turn2 = "$ mv a.txt b.txt && rm README.md && printf 'x\\377y' > data.bin && mkdir -p d/e && echo two > d/e/two.txt"
	// turn3 is the crashing turn for turn.* failpoints: its first tool
	// writes c.txt, its second deletes b.txt and makes s3.txt.
	turn3 = "write c.txt\nagent wrote this in turn 3\nEOF\n$ rm b.txt && echo shell3 > s3.txt && chmod -x run.sh"
)

type outcome struct {
	name, step, killed, head, workspace, lost, told string
}

// TestCrashAtEveryFailpoint is the crash-injection proof; -v prints the
// failpoint x outcome table recorded in docs/crash-safety.md.
func TestCrashAtEveryFailpoint(t *testing.T) {
	var mu sync.Mutex
	var table []outcome
	t.Cleanup(func() {
		sort.Slice(table, func(i, j int) bool { return index(table[i].name) < index(table[j].name) })
		var b strings.Builder
		b.WriteString("\n| failpoint | step | process | head after reopen | workspace after reopen | bytes lost | user told |\n|---|---|---|---|---|---|---|\n")
		for _, o := range table {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", o.name, o.step, o.killed, o.head, o.workspace, o.lost, o.told)
		}
		t.Log(b.String())
	})
	for _, fp := range allFailpoints() {
		t.Run(fp, func(t *testing.T) {
			t.Parallel()
			o := crashAt(t, fp)
			mu.Lock()
			table = append(table, o)
			mu.Unlock()
		})
	}
}

func index(name string) int {
	for i, n := range allFailpoints() {
		if n == name {
			return i
		}
	}
	return -1
}

func crashAt(t *testing.T, fp string) outcome {
	e := &env{t: t, repo: gittest.NewRepo(t), data: t.TempDir()}
	e.turn(turn1)
	atCP2 := e.files()
	e.turn(turn2)
	git0 := e.gitState()
	o := outcome{name: fp, killed: "SIGKILL"}
	requireKilled := func(r result) {
		t.Helper()
		if !r.killed {
			t.Fatalf("%s was not reached: exit %d\n%s\n%s", fp, r.code, r.stdout, r.stderr)
		}
	}
	switch {
	case strings.HasPrefix(fp, "turn."):
		o.step = "turn 3"
		before := e.files()
		requireKilled(e.yolop(fp, "--session", e.sid, "-p", turn3))
		mid := e.files()
		notes := e.repairNotes()
		rows := e.list()
		e.requireGit(git0)
		// Every byte present before the turn, and every byte the agent
		// wrote before the kill, is in place or in a snapshot ref.
		if l := e.lost(merge(before, mid)); len(l) > 0 {
			t.Fatalf("bytes lost: %v", l)
		}
		if d := diff(mid, e.files()); len(d) > 0 {
			t.Fatalf("reopening changed the workspace: %v", d)
		}
		o.lost = "none"
		if fp == "turn.after_capture" {
			// Killed before checkpoint.created: the turn never existed.
			if head(rows) != "cp2" || len(notes) != 0 {
				t.Fatalf("rows %+v notes %v: want head cp2, no repair", rows, notes)
			}
			if d := diff(before, e.files()); len(d) > 0 {
				t.Fatalf("workspace changed though the turn never ran: %v", d)
			}
			o.head, o.workspace, o.told = "cp2 (turn 3 never recorded)", "unchanged", "nothing to tell"
			e.turn("after the crash")
			if r := e.list(); head(r) != "cp3" {
				t.Fatalf("next turn after the crash: %+v", r)
			}
			return o
		}
		if head(rows) != "cp3" || rows[0].Status != "interrupted" {
			t.Fatalf("rows %+v: want cp3 interrupted", rows)
		}
		if !hasNote(notes, "cp3 was interrupted") {
			t.Fatalf("no repair note about the interrupted turn: %v", notes)
		}
		o.head, o.told = "cp3, status interrupted", "yes: "+quoteNote(notes)
		o.workspace = fmt.Sprintf("as the kill left it (%d path(s) changed by the turn)", len(diff(before, mid)))
		// The interrupted turn is rewindable: back to exactly before it.
		e.restore("/rewind cp3 both")
		if d := diff(before, e.files()); len(d) > 0 {
			t.Fatalf("rewinding the interrupted turn: %v", d)
		}
		if r := e.list(); head(r) != "cp2" {
			t.Fatalf("after rewinding cp3: %+v", r)
		}
		e.requireGit(git0)
		o.workspace += "; /rewind cp3 restores the pre-turn files"
		return o
	}

	// Preview and restore failpoints: a third turn, then the user edits
	// files outside any turn before the preview.
	e.turn(turn3)
	write(t, e.root, "notes/user.txt", "the user's own notes\n")
	write(t, e.root, "c.txt", "the user rewrote c.txt\n")
	if err := os.Remove(filepath.Join(e.root, "s3.txt")); err != nil {
		t.Fatal(err)
	}
	before := e.files()
	const cmd = "/rewind cp2 both"
	if fp == "preview.after_capture" {
		o.step = "preview `" + cmd + "`"
		requireKilled(e.yolop(fp, "--session", e.sid, "-p", cmd))
		notes := e.repairNotes()
		rows := e.list()
		e.requireGit(git0)
		if head(rows) != "cp3" || len(notes) != 0 {
			t.Fatalf("rows %+v notes %v", rows, notes)
		}
		if d := diff(before, e.files()); len(d) > 0 {
			t.Fatalf("a killed preview changed the workspace: %v", d)
		}
		if l := e.lost(before); len(l) > 0 {
			t.Fatalf("lost: %v", l)
		}
		// A new preview and confirm work after the crash.
		e.restore(cmd)
		if d := diff(atCP2, e.files()); len(d) > 0 {
			t.Fatalf("restore after the crash: %v", d)
		}
		if l := e.lost(before); len(l) > 0 {
			t.Fatalf("lost after the later restore: %v", l)
		}
		o.head, o.workspace, o.lost, o.told = "cp3 (unchanged)", "unchanged; a new preview+confirm then works", "none", "nothing to tell"
		return o
	}

	o.step = "confirm `" + cmd + "`"
	p := e.ok("--session", e.sid, "-p", cmd)
	tok := str(p, "token")
	recovery := snapshot.RefPrefix + e.sid + "/r1"
	requireKilled(e.yolop(fp, "--session", e.sid, "-p", cmd+" --confirm "+tok))
	notes := e.repairNotes()
	rows := e.list()
	e.requireGit(git0)
	if l := e.lost(before, recovery); len(l) > 0 {
		t.Fatalf("bytes in neither the worktree nor %s: %v", recovery, l)
	}
	o.lost = "none (all in place or in " + "`r1`)"
	if fp == "restore.after_head" {
		// head.moved is durable: the restore happened and was verified.
		if len(rows) != 1 || head(rows) != "cp1" || len(notes) != 0 {
			t.Fatalf("rows %+v notes %v: want the restore applied (head cp1)", rows, notes)
		}
		if d := diff(atCP2, e.files()); len(d) > 0 {
			t.Fatalf("workspace is not the verified target: %v", d)
		}
		// The user's edits are in the recovery ref, byte for byte, and
		// /redo brings them back.
		got := gittest.Git(t, e.root, "cat-file", "-p", recovery+":notes/user.txt")
		if got+"\n" != "the user's own notes\n" {
			t.Fatalf("%s:notes/user.txt = %q", recovery, got)
		}
		e.restore("/redo")
		if d := diff(before, e.files()); len(d) > 0 {
			t.Fatalf("/redo after the crash: %v", d)
		}
		o.head, o.workspace, o.told = "cp1 (new head)", "verified target (cp2); /redo brings the pre-restore files back", "nothing to tell (restore completed)"
		return o
	}
	// No head.moved: the old head stays and the files are rolled back.
	if head(rows) != "cp3" || len(rows) != 3 {
		t.Fatalf("rows %+v: want the old head cp3", rows)
	}
	if d := diff(before, e.files()); len(d) > 0 {
		t.Fatalf("workspace not rolled back to before the restore: %v", d)
	}
	if !e.timelineHas("restore.aborted", "rolled back on open") {
		t.Fatal("no restore.aborted record for the interrupted restore")
	}
	if !hasNote(notes, "was interrupted") || !hasNote(notes, recovery) {
		t.Fatalf("repair notes do not tell the user: %v", notes)
	}
	o.head, o.workspace, o.told = "cp3 (old head)", "rolled back to the pre-restore files", "yes: "+quoteNote(notes)
	// And a fresh restore works afterwards.
	e.restore(cmd)
	if d := diff(atCP2, e.files()); len(d) > 0 {
		t.Fatalf("restore after the crash: %v", d)
	}
	return o
}

func (e *env) requireGit(want string) {
	e.t.Helper()
	if got := e.gitState(); got != want {
		e.t.Fatalf("HEAD, branches or a real index changed:\n%s\nwant\n%s", got, want)
	}
}

func hasNote(notes []string, s string) bool {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

func quoteNote(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	n := notes[0]
	if len(n) > 60 {
		n = n[:57] + "..."
	}
	return "\"" + n + "\""
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	gittest.WriteFile(t, root, rel, content)
}

// TestTornEventsTail: the last record of events.jsonl is torn (a power
// loss or a damaged disk; a kill alone cannot do it, every append is
// fsynced) after turn.completed named it. The next process must repair,
// say so, and run turns again; the session stays writable afterwards.
func TestTornEventsTail(t *testing.T) {
	t.Parallel()
	e := &env{t: t, repo: gittest.NewRepo(t), data: t.TempDir()}
	e.turn(turn1)
	e.turn(turn2)
	path := filepath.Join(e.data, "sessions", e.sid, session.EventsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	last := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	if err := os.WriteFile(path, data[:last+(len(data)-last)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	notes := e.repairNotes()
	if !hasNote(notes, "torn") || !hasNote(notes, "lost") {
		t.Fatalf("reopening after a torn event log told the user %q", notes)
	}
	e.turn("echo after the repair")
	e.turn("echo and again")
	rows := e.list()
	if head(rows) != "cp4" || len(rows) != 4 {
		t.Fatalf("active branch after the repair: %+v, want cp4..cp1", rows)
	}
	for _, r := range rows {
		if r.Status != "completed" {
			t.Fatalf("turn %s is %s after the repair", r.ID, r.Status)
		}
	}
	if notes := e.repairNotes(); len(notes) != 0 {
		t.Fatalf("a later open repaired again: %q", notes)
	}
}
