package checkpoint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// TestMain isolates git from the machine's config and gives the agent's
// shell an empty home (a login shell sources the user's profile).
func TestMain(m *testing.M) { os.Exit(gittest.MainWithHome(m)) }

// rig is a session assembled by the product's own constructor (app.Open
// with test hooks): a user repository, a session-owned worktree, the
// session store, the timeline, the snapshot engine, the tools (real bash),
// the agent with the sim provider, and the controller over all of them.
type rig struct {
	t     testing.TB
	data  string // data dir
	repo  string // the user's checkout
	id    string
	root  string // active root (the worktree, or repo without one)
	noWS  string // NoWorkspace reason; "" when the session owns a worktree
	app   *app.Session
	sess  *session.Session
	tl    *timeline.Log
	comps *timeline.CompactionLog
	tasks *tools.Tasks
	ts    *tools.Set
	ag    *agent.Agent
	ctl   *checkpoint.Controller
	eng   *snapshot.Engine // nil without workspace snapshots
	notes []string
	env   app.Env // what reopening the session gives it
}

type rigOpts struct {
	// workspace is the --workspace mode ("" = the default, a worktree):
	// config.WorkspaceNone for conversation-only checkpoints,
	// config.WorkspaceInPlace for a session in the user's checkout.
	workspace string
	repo      string // use this repository instead of a new one
	// runtime replaces the agent as the controller's runtime.
	runtime func(*agent.Agent) checkpoint.Runtime
	// journal wraps the timeline the controller writes to (fault
	// injection), for the first open only.
	journal func(checkpoint.Timeline) checkpoint.Timeline
	// sandbox is the --sandbox level ("" = the default, write).
	sandbox string
}

func newRig(t testing.TB, o rigOpts) *rig {
	t.Helper()
	r := &rig{t: t, data: t.TempDir(), repo: o.repo}
	if r.repo == "" {
		r.repo = gittest.NewRepo(t)
		gittest.WriteFile(t, r.repo, ".gitignore", "*.log\n")
		gittest.WriteFile(t, r.repo, "src/main.go", "package main\n")
		gittest.Commit(t, r.repo, "base")
	}
	r.env = app.Env{DataDir: r.data, Dir: r.repo, Provider: provider.Config{Provider: provider.NameSim}, Hooks: app.Hooks{System: "test", Runtime: o.runtime}, Sandbox: o.sandbox}
	first := r.env
	first.Hooks.Journal = o.journal
	r.open(first, app.New{Mode: o.workspace, Start: app.Now})
	t.Cleanup(r.close)
	return r
}

// open opens the session req names with the product's constructor and
// exposes its parts.
func (r *rig) open(env app.Env, req app.Request) {
	r.t.Helper()
	s, err := app.Open(context.Background(), env, req)
	if err != nil {
		r.t.Fatal(err)
	}
	p := s.Parts()
	r.app, r.id = s, s.ID()
	r.sess, r.tl, r.comps, r.tasks, r.ts, r.ag, r.ctl, r.eng = p.Session, p.Timeline, p.Compactions, p.Tasks, p.Tools, p.Agent, p.Controller, p.Snapshots()
	r.notes, r.noWS, r.root = p.Notes, p.NoWorkspace, p.Session.Workspace().ActiveRoot
	if r.eng != nil {
		r.noWS = ""
	}
}

// close releases the session the way the product does (background work
// waited for, lock released last).
func (r *rig) close() {
	if r.app == nil {
		return
	}
	if err := r.app.Close(); err != nil {
		r.t.Errorf("close session: %v", err)
	}
	r.app = nil
}

// reopen closes the session and opens it again over the same directories,
// as a new process would.
func (r *rig) reopen() {
	r.t.Helper()
	r.close()
	r.open(r.env, app.Resume{ID: r.id})
}

// turn runs one turn and requires it to complete.
func (r *rig) turn(prompt string) checkpoint.TurnOutcome {
	r.t.Helper()
	out, err := r.ctl.RunTurn(context.Background(), prompt, func(agent.Update) {})
	if err != nil {
		r.t.Fatalf("turn %q: %v", prompt, err)
	}
	if out.Status != agent.StatusCompleted {
		r.t.Fatalf("turn %q: status %s (%v)", prompt, out.Status, out.Err)
	}
	return out
}

// restore previews and confirms a request.
func (r *rig) restore(req checkpoint.Request) *checkpoint.Restored {
	r.t.Helper()
	ctx := context.Background()
	pv, err := r.ctl.Preview(ctx, req)
	if err != nil {
		r.t.Fatalf("preview %+v: %v", req, err)
	}
	confirm := req
	if confirm.Action == checkpoint.ActionUndo {
		confirm.Target = ""
	}
	res, err := r.ctl.Confirm(ctx, confirm, pv.Token)
	if err != nil {
		r.t.Fatalf("confirm %+v: %v", req, err)
	}
	return res
}

// entry is one path of a workspace manifest.
type entry struct {
	Mode fs.FileMode
	Data string // content hash, or link target
}

// manifest describes every file and symlink under root except .git, as a
// snapshot promises to restore it: git records a file's type and its
// executable bit, nothing else of its mode.
func manifest(t testing.TB, root string) map[string]entry {
	t.Helper()
	m := map[string]entry{}
	for rel, g := range gittest.Manifest(t, root, gittest.ManifestOptions{}) {
		e := entry{Mode: g.Type | 0o644, Data: g.Hash}
		if g.Exec() {
			e.Mode |= 0o111
		}
		if g.Type == fs.ModeSymlink {
			e.Data = "-> " + g.Link
		}
		m[rel] = e
	}
	return m
}

// diffManifests lists the paths where two manifests differ.
func diffManifests(want, got map[string]entry) []string {
	var d []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			d = append(d, "missing "+p)
		case g != w:
			d = append(d, fmt.Sprintf("%s: %v %s, want %v %s", p, g.Mode, g.Data, w.Mode, w.Data))
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

func (r *rig) requireManifest(want map[string]entry, what string) {
	r.t.Helper()
	if d := diffManifests(want, manifest(r.t, r.root)); len(d) > 0 {
		r.t.Fatalf("%s: workspace differs:\n%s", what, strings.Join(d, "\n"))
	}
}

// gitState is what a restore must never change: HEAD, every user ref and
// the real index of the worktree and of the user's checkout.
type gitState struct {
	head, refs    string
	index         []byte
	userIndex     []byte
	userHead      string
	userWorkspace map[string]entry
}

func (r *rig) gitState() gitState {
	r.t.Helper()
	var s gitState
	if r.noWS == "" {
		s.head = gittest.Git(r.t, r.root, "rev-parse", "HEAD")
		s.index = readFile(r.t, gittest.Git(r.t, r.root, "rev-parse", "--path-format=absolute", "--git-path", "index"))
	}
	s.refs = gittest.Git(r.t, r.repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags", "refs/remotes")
	s.userHead = gittest.Git(r.t, r.repo, "rev-parse", "HEAD")
	s.userIndex = readFile(r.t, filepath.Join(r.repo, ".git", "index"))
	if r.noWS == "" {
		s.userWorkspace = manifest(r.t, r.repo)
	}
	return s
}

func (r *rig) requireGitState(want gitState, what string) {
	r.t.Helper()
	got := r.gitState()
	if got.head != want.head || got.refs != want.refs || got.userHead != want.userHead {
		r.t.Fatalf("%s: HEAD or refs changed:\nhead %s -> %s\nuser head %s -> %s\nrefs\n%s\n->\n%s", what, want.head, got.head, want.userHead, got.userHead, want.refs, got.refs)
	}
	if !bytes.Equal(got.index, want.index) {
		r.t.Fatalf("%s: the worktree's real index changed", what)
	}
	if !bytes.Equal(got.userIndex, want.userIndex) {
		r.t.Fatalf("%s: the user's real index changed", what)
	}
	if d := diffManifests(want.userWorkspace, got.userWorkspace); len(d) > 0 {
		r.t.Fatalf("%s: the user's checkout changed: %v", what, d)
	}
}

func readFile(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (r *rig) timelineBytes() []byte {
	return readFile(r.t, r.sess.Path(session.TimelineFile))
}

// contextText is the model input as one string, for searching.
func (r *rig) contextText() string {
	b, err := json.Marshal(r.ag.Context())
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

func eventsText(t testing.TB, evs []session.Event) string {
	b, err := json.Marshal(evs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func write(t testing.TB, root, rel, content string) {
	t.Helper()
	gittest.WriteFile(t, root, rel, content)
}
