package checkpoint

import (
	"context"
	"fmt"
	"slices"

	"github.com/yolop-dev/yolop/internal/snapshot"
)

// Reverter is what a snapshot engine offers sessions in place (the user's
// own checkout or folder): the tree that taking steps back path by path
// over the current files makes (snapshot.Engine.Revert).
type Reverter interface {
	Revert(ctx context.Context, current string, steps []snapshot.Step, o snapshot.RevertOptions) (string, []snapshot.PathOutcome, error)
}

// Conflict choices of a restore in place (Request.OnConflict), bound into
// its token.
const (
	// OnConflictKeep (the default): a path whose changes since overlap the
	// agent's keeps the current file.
	OnConflictKeep = ""
	// OnConflictMarkers writes labelled conflict markers instead.
	OnConflictMarkers = "markers"
	// OnConflictOverwrite restores the checkpoint's bytes of every path the
	// undone turns changed, whatever changed it since (--overwrite-mine).
	OnConflictOverwrite = "overwrite-mine"
)

func revertOptions(onConflict string) snapshot.RevertOptions {
	return snapshot.RevertOptions{Markers: onConflict == OnConflictMarkers, Overwrite: onConflict == OnConflictOverwrite}
}

// reverter is the engine's in-place revert, nil for sessions that own
// their worktree.
func (c *Controller) reverter() Reverter {
	if !c.cfg.InPlace || c.cfg.Snapshots == nil {
		return nil
	}
	r, _ := c.cfg.Snapshots.(Reverter)
	return r
}

// inPlaceStepsLocked lists what a restore in place of plan p takes back,
// newest first: each undone turn's own change (its start capture to its
// end capture), or for a redo the change the last restore made. recovery
// is the fresh capture of the current files.
func (c *Controller) inPlaceStepsLocked(p *plan, recovery string) ([]snapshot.Step, []Warning, error) {
	var steps []snapshot.Step
	var warns []Warning
	switch p.action {
	case ActionRedo:
		r := c.state.Redo
		if r == nil || r.Recovery == nil || r.Wrote == "" {
			return nil, nil, &Error{Code: CodeNoWorkspace, Msg: "the last restore did not record the files it wrote, so a redo in place cannot tell its changes from yours; nothing was changed"}
		}
		steps = append(steps, snapshot.Step{From: r.Recovery.Tree, To: r.Wrote, Label: "the last restore"})
		return steps, nil, nil
	case ActionBranch:
		return c.branchStepsLocked(p)
	}
	// p.undone runs oldest first (the order the preview lists them);
	// taking the turns back goes the other way, each over what the newer
	// ones left.
	undone := slices.Clone(p.undone)
	slices.Reverse(undone)
	for i, id := range undone {
		cp := c.state.Checkpoints[id]
		if cp == nil || cp.Snapshot == nil {
			why := "it was not captured"
			if cp != nil && cp.CaptureError != "" {
				why = cp.CaptureError
			}
			return nil, nil, &Error{Code: CodeNoWorkspace, Msg: fmt.Sprintf("turn %s has no snapshot of the files before it (%s), so its changes cannot be told from yours; only `/rewind %s conversation` is possible", id, why, p.target)}
		}
		to := ""
		switch {
		case cp.End != nil:
			to = cp.End.Tree
		case i > 0:
			// The next turn started from what this one left.
			if next := c.state.Checkpoints[undone[i-1]]; next != nil && next.Snapshot != nil {
				to = next.Snapshot.Tree
			}
		}
		if to == "" {
			to = recovery
			warns = append(warns, Warning{Kind: "no_end_capture", Turn: id,
				Message: fmt.Sprintf("turn %s has no capture of how it left the files, so every change since it started counts as the agent's and is undone", id)})
		}
		steps = append(steps, restoreSteps(cp)...)
		steps = append(steps, snapshot.Step{From: cp.Snapshot.Tree, To: to, Label: id})
	}
	return steps, warns, nil
}

// restoreSteps are the workspace-only restores made after turn cp while it
// was the head, newest first: they changed the files after it, so they are
// taken back before it.
func restoreSteps(cp *timelineCheckpoint) []snapshot.Step {
	var out []snapshot.Step
	for k := len(cp.Restores) - 1; k >= 0; k-- {
		rc := cp.Restores[k]
		out = append(out, snapshot.Step{From: rc.From, To: rc.To, Label: "a restore after " + cp.ID})
	}
	return out
}

// branchStepsLocked takes back the active branch's turns down to where it
// parts from branch p.branch, then replays that branch's own turns
// (oldest first) as changes to take back in reverse.
func (c *Controller) branchStepsLocked(p *plan) ([]snapshot.Step, []Warning, error) {
	here := c.chainLocked(c.state.Head)
	there := c.chainLocked(p.target)
	common := 0
	for common < len(here) && common < len(there) && here[common].ID == there[common].ID {
		common++
	}
	var steps []snapshot.Step
	pair := func(id string) (string, string, error) {
		cp := c.state.Checkpoints[id]
		if cp == nil || cp.Snapshot == nil || cp.End == nil {
			return "", "", &Error{Code: CodeNoWorkspace, Msg: fmt.Sprintf("turn %s has no snapshots of the files before and after it, so switching the files in place cannot tell its changes from yours; use `/branch %s conversation`", id, p.branch)}
		}
		return cp.Snapshot.Tree, cp.End.Tree, nil
	}
	for i := len(here) - 1; i >= common; i-- {
		from, to, err := pair(here[i].ID)
		if err != nil {
			return nil, nil, err
		}
		steps = append(steps, restoreSteps(here[i])...)
		steps = append(steps, snapshot.Step{From: from, To: to, Label: here[i].ID})
	}
	for _, cp := range there[common:] {
		from, to, err := pair(cp.ID)
		if err != nil {
			return nil, nil, err
		}
		// Applying the turn's change again is taking back its reverse.
		steps = append(steps, snapshot.Step{From: to, To: from, Label: cp.ID})
	}
	return steps, nil, nil
}

// planInPlaceLocked turns the preview of a restore in place into the tree
// that undoes the agent's changes and no one else's: the preview's paths
// get their outcomes, and the paths whose current file stays are listed
// as kept.
func (c *Controller) planInPlaceLocked(ctx context.Context, rv Reverter, p *plan, recovery, onConflict string) ([]snapshot.PathOutcome, []Warning, error) {
	steps, warns, err := c.inPlaceStepsLocked(p, recovery)
	if err != nil {
		return nil, nil, err
	}
	tree, outs, err := rv.Revert(ctx, recovery, steps, revertOptions(onConflict))
	if err != nil {
		return nil, nil, &Error{Code: CodeCaptureFailed, Msg: "could not work out which changes are the agent's: " + err.Error() + "; nothing was changed", Err: err}
	}
	p.targetTree = tree
	return outs, warns, nil
}

// applyOutcomes gives the preview's paths their outcomes and adds the
// paths the restore leaves as they are.
func applyOutcomes(pv *Preview, outs []snapshot.PathOutcome) {
	by := make(map[string]snapshot.PathOutcome, len(outs))
	for _, o := range outs {
		by[o.Path] = o
	}
	listed := map[string]bool{}
	for i := range pv.Paths {
		pc := &pv.Paths[i]
		listed[pc.Path] = true
		if o, ok := by[pc.Path]; ok {
			pc.Outcome, pc.Why = string(o.Outcome), o.Why
		} else {
			pc.Outcome = string(snapshot.Restored)
		}
	}
	for _, o := range outs {
		if listed[o.Path] || o.Changed {
			continue
		}
		if o.Outcome == snapshot.Kept {
			pc := NewPathChange(o.Path, string(o.Kind))
			pc.Outcome, pc.Why = string(o.Outcome), o.Why
			pv.Paths = append(pv.Paths, pc)
		}
	}
	sortChanges(pv.Paths)
}

// putBackLocked returns the files to the recovery capture after a restore
// that failed or was interrupted: cur is a fresh capture, wrote what the
// restore was writing. In place, only paths that still hold what the
// restore wrote go back (the user's editor may have written since);
// otherwise the whole recovery tree is restored.
func (c *Controller) putBackLocked(ctx context.Context, cur snapshot.Snapshot, recovery, wrote string) error {
	if cur.Tree == recovery {
		return nil
	}
	target := recovery
	if rv := c.reverter(); rv != nil && wrote != "" {
		tree, _, err := rv.Revert(ctx, cur.Tree, []snapshot.Step{{From: recovery, To: wrote, Label: "the restore"}}, snapshot.RevertOptions{})
		if err != nil {
			return err
		}
		target = tree
	}
	if target == cur.Tree {
		return nil
	}
	_, err := c.cfg.Snapshots.Restore(ctx, cur, target)
	return err
}

// TurnTrees are the start and end captures of a turn ("" when missing).
type TurnTrees struct {
	ID         string
	Start, End string
}

// TurnTrees lists the turns of the active branch, oldest first, with the
// trees of their start and end captures (turns without a start capture
// are left out).
func (c *Controller) TurnTrees() []TurnTrees {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []TurnTrees
	for _, cp := range c.chainLocked(c.state.Head) {
		if cp.Snapshot == nil {
			continue
		}
		t := TurnTrees{ID: cp.ID, Start: cp.Snapshot.Tree}
		if cp.End != nil {
			t.End = cp.End.Tree
		}
		out = append(out, t)
	}
	return out
}
