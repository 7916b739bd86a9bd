package app

import (
	"errors"
	"fmt"
	"os"

	"github.com/yolop-dev/yolop/internal/agent/system"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// view is a session opened for reading only (Options.ForReading when it
// cannot be opened for writing): it takes no lock, repairs nothing and
// writes nothing. Listing works, with files_changed read straight from
// git's objects; every turn and restore is refused with the reason.
type view struct {
	sess *session.Session
	ctl  *checkpoint.Controller
	why  string
	// notices are said once by hosts that do not show the read-only
	// reason themselves (print mode).
	notices []string
}

// openView opens o.SessionID for reading; why says why it could not be
// opened for writing.
func openView(o Options, why string) (*view, error) {
	sess, err := session.OpenReadOnly(o.DataDir, o.SessionID)
	if err != nil {
		return nil, err
	}
	recs, err := timeline.ReadRecords(sess.Path(session.TimelineFile))
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("session %s: read its timeline: %w", sess.ID, err)
	}
	ws := sess.Workspace()
	var snaps checkpoint.Snapshots
	noWS := ws.NoWorkspaceReason
	if ws.Kind == session.KindWorktree && ws.Worktree != nil {
		if st, err := os.Stat(ws.Worktree.Path); err == nil && st.IsDir() {
			snaps = snapshot.NewReadOnly(ws.Worktree.Path, sess.Path("snapshot"))
		} else {
			noWS = fmt.Sprintf("the session worktree %s is missing", ws.Worktree.Path)
		}
	} else if noWS == "" {
		noWS = "the session has no worktree of its own"
	}
	ro := "opened for reading only: " + why
	if sess.Corruption() != nil {
		_, ro = sess.ReadOnly()
	}
	ctl := checkpoint.New(checkpoint.Config{SessionID: sess.ID, Dir: sess.Dir, Store: sess, Timeline: timeline.Freeze(recs), Snapshots: snaps, NoWorkspace: noWS, ReadOnly: ro, OtherRefs: catalog.ApplyRefs(o.DataDir, ws)})
	return &view{sess: sess, ctl: ctl, why: why}, nil
}

func (v *view) id() string                       { return v.sess.ID }
func (v *view) Checkpoints() command.Checkpoints { return v.ctl }
func (v *view) Background() command.Tasks        { return noTasks{} }
func (v *view) ContextReport() string {
	return "The session is " + v.ctl.ReadOnly() + "; it sends nothing to the model.\n" + system.Instructions(v.sess.Workspace())().Report()
}
func (v *view) info(prov provider.Provider) Info {
	ws := v.sess.Workspace()
	in := Info{Provider: prov.Name(), Model: prov.Model(), SessionID: v.sess.ID, Title: ws.Title, RepoRoot: ws.RepoRoot, ActiveRoot: ws.ActiveRoot}
	if ws.Worktree != nil {
		in.Branch, in.BranchNote = land.WorktreeBranch(ws.Worktree.Path, ws.Worktree.Branch)
	}
	in.Recycled = ws.Recycled
	in.Workspace, in.WorkspaceReason = v.ctl.WorkspaceAvailable()
	if in.Workspace {
		in.WorkspaceReason = ""
	}
	in.ReadOnly, in.ReadOnlyReason = true, v.ctl.ReadOnly()
	in.Checkpoints = v.ctl.ActiveCount()
	in.RedoAvailable = v.ctl.RedoAvailable()
	in.Repairs = v.sess.Repaired()
	in.Notices = v.notices
	return in
}

// readOnlyFallback says why Open may fall back to a view, or "" when err
// is not a reason to.
func readOnlyFallback(err error) string {
	var le *session.LockedError
	switch {
	case errors.As(err, &le):
		return le.Error()
	case errors.Is(err, session.ErrNotWritable):
		return fmt.Sprintf("its directory cannot be written (%v)", errors.Unwrap(err))
	}
	return ""
}
