package land

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/failpoint"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// UndoOptions configure Undo.
type UndoOptions struct {
	To    string // the checkout ("" = the session's)
	Force bool   // overwrite paths edited since the apply (their content is kept under a ref)
	// Hints is the grammar of the follow-up commands the texts name.
	Hints Grammar
}

// UndoResult describes an undone apply.
type UndoResult struct {
	SessionID string   `json:"session_id"`
	Target    string   `json:"target"`
	UndoRef   string   `json:"undo_ref"`
	Paths     []string `json:"paths"`               // the paths put back
	Overwrote []string `json:"overwrote,omitempty"` // edited since the apply (--force)
	SavedRef  string   `json:"saved_ref,omitempty"` // where the overwritten edits are kept
	Notes     []string `json:"notes,omitempty"`
	// Repairs are the notes that report an interrupted apply or undo
	// settled first (Text leaves them to the host).
	Repairs []string `json:"-"`
}

// EditedError lists the paths the user changed since the apply wrote them.
type EditedError struct {
	Target    string
	Paths     []string
	SessionID string  // for the hint
	Hints     Grammar // the grammar of the hint
}

func (e *EditedError) Error() string {
	force := "run `yolop apply --undo --force " + e.SessionID + "`"
	if e.Hints == GrammarSlash {
		force = "from a shell run `yolop apply --undo --force " + e.SessionID + "`"
	}
	return fmt.Sprintf("%s changed in %s since the apply wrote %s: %s; undo would overwrite those edits, so nothing was changed (keep them, or %s: the edited files are then kept under a ref)",
		plural(len(e.Paths), "path", "paths"), e.Target, map[bool]string{true: "it", false: "them"}[len(e.Paths) == 1], strings.Join(displayPaths(e.Paths), ", "), force)
}

func (e *EditedError) Unwrap() error { return ErrEditedSince }

// Undo puts back, byte for byte, the paths the session's last apply to the
// checkout wrote.
func Undo(ctx context.Context, s Session, o UndoOptions) (*UndoResult, error) {
	target := o.To
	if target == "" {
		target = s.Checkout
	}
	if target == "" {
		return nil, fmt.Errorf("%w: the session does not name the checkout it was started from; use --to DIR", ErrNothingToUndo)
	}
	c, notes, err := openCheckout(ctx, s.DataDir, s.ID, target, "")
	if err != nil {
		return nil, err
	}
	defer c.close()
	rec, ok := c.j.lastApplied(s.ID)
	if !ok {
		return nil, fmt.Errorf("%w: session %s has no apply to %s left to undo", ErrNothingToUndo, s.ID, c.dir)
	}
	res := &UndoResult{SessionID: s.ID, Target: c.dir, UndoRef: rec.UndoRef, Paths: []string{}, Notes: notes, Repairs: append([]string(nil), notes...)}
	// The capture the apply started from must still exist.
	if _, err := treeOf(ctx, git.New(c.dir), rec.UndoRef); err != nil {
		return nil, fmt.Errorf("the checkout's files before apply %d were kept at %s, which is gone (pruned?): %w", rec.N, rec.UndoRef, err)
	}
	cur, err := c.eng.Capture(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("capture the checkout %s: %w", c.dir, err)
	}
	sinceApply, err := diffMap(ctx, c.eng, cur.Tree, rec.After)
	if err != nil {
		return nil, err
	}
	toBefore, err := diffMap(ctx, c.eng, cur.Tree, rec.Before)
	if err != nil {
		return nil, err
	}
	// A path inside a nested repository of the checkout was never written
	// (an apply recorded before it left them out of its list).
	probe := make([]snapshot.Change, len(rec.Paths))
	for i, p := range rec.Paths {
		probe[i] = snapshot.Change{Path: p}
	}
	_, alone := c.eng.LeftAlone(probe)
	var edited []string
	var edits []edit
	for _, p := range rec.Paths {
		if atOrUnder(p, alone) {
			continue
		}
		if _, ok := sinceApply[p]; ok {
			edited = append(edited, p)
		}
		if ch, ok := toBefore[p]; ok {
			edits = append(edits, edit{p, newSide(ch)})
			res.Paths = append(res.Paths, p)
		}
	}
	sort.Strings(edited)
	if len(edited) > 0 && !o.Force {
		return nil, &EditedError{Target: c.dir, Paths: edited, SessionID: s.ID, Hints: o.Hints}
	}
	if len(edited) > 0 {
		res.Overwrote = edited
		res.SavedRef = fmt.Sprintf("%s%s/%d-before-undo", ApplyRefPrefix, s.ID, rec.N)
		if _, err := git.New(c.dir).Run(ctx, "-c", "core.logAllRefUpdates=false", "update-ref", "--no-deref", res.SavedRef, cur.Tree); err != nil {
			return nil, fmt.Errorf("keep the edited files at %s: %w", res.SavedRef, err)
		}
	}
	goal, err := editTree(ctx, git.New(c.dir), c.scratch, cur.Tree, edits)
	if err != nil {
		return nil, err
	}
	start := record{Type: recUndoStarted, SessionID: s.ID, N: rec.N, Target: c.dir, UndoRef: rec.UndoRef, Before: cur.Tree, After: goal, Paths: res.Paths, Dirs: rec.Dirs}
	if err := c.j.append(start); err != nil {
		return nil, err
	}
	failpoint.Hit("undo.after_intent")
	if goal != cur.Tree {
		if _, err := c.eng.Restore(ctx, cur, goal); err != nil {
			// Completing the undo is the repair; try once more now.
			note, serr := c.settle(context.WithoutCancel(ctx), start)
			if serr != nil {
				return nil, fmt.Errorf("undo: %w; retrying failed too: %v (run %s again)", err, serr, o.Hints.undo(s.ID))
			}
			return nil, fmt.Errorf("undo: %w (%s)", err, note)
		}
	}
	if err := recreateDirs(c.dir, rec.Dirs); err != nil {
		return nil, err
	}
	failpoint.Hit("undo.before_done")
	if err := c.j.append(record{Type: recUndoDone, SessionID: s.ID, N: rec.N, Target: c.dir}); err != nil {
		return nil, err
	}
	return res, nil
}

// Repair settles an interrupted apply or undo in the checkout, if the
// journal holds one; it is a no-op otherwise. It returns what was done.
func Repair(ctx context.Context, dataDir, sessionID, checkout string) ([]string, error) {
	// Every session open calls this: look for the journal before running
	// git. checkout is a top level (the session's recorded checkout), and
	// journals are keyed by the top level with symlinks resolved.
	top := checkout
	if real, err := filepath.EvalSymlinks(checkout); err == nil {
		top = real
	}
	journalPath := filepath.Join(stateDir(dataDir, top), "journal.jsonl")
	if _, err := os.Stat(journalPath); err != nil {
		return nil, nil // never applied to (or gone): nothing of ours to repair
	}
	recs, err := readJournal(journalPath)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	if (&journal{recs: recs}).pending() == nil {
		return nil, nil
	}
	if checkIdle(ctx, top) != nil {
		return nil, nil // the next apply repairs it once the checkout is idle
	}
	c, notes, err := openCheckout(ctx, dataDir, sessionID, top, "")
	if err != nil {
		return nil, err
	}
	c.close()
	return notes, nil
}

// LastApply describes a session's most recent apply.
type LastApply struct {
	Target  string    `json:"target"`
	Time    time.Time `json:"time"`
	Paths   int       `json:"paths"`
	UndoRef string    `json:"undo_ref"`
	State   string    `json:"state"` // applied, undone, rolled back, interrupted
}

// Last returns the session's most recent apply in any checkout, or nil.
func Last(dataDir, sessionID string) *LastApply {
	dirs, err := os.ReadDir(filepath.Join(dataDir, "apply"))
	if err != nil {
		return nil
	}
	var best *LastApply
	for _, d := range dirs {
		recs, err := readJournal(filepath.Join(dataDir, "apply", d.Name(), "journal.jsonl"))
		if err != nil {
			continue
		}
		var cur *LastApply
		n := 0
		for _, r := range recs {
			if r.SessionID != sessionID {
				continue
			}
			switch r.Type {
			case recApplyStarted:
				cur = &LastApply{Target: r.Target, Time: r.Time, Paths: len(r.Paths), UndoRef: r.UndoRef, State: "interrupted"}
				n = r.N
			case recApplyDone:
				if cur != nil && r.N == n {
					cur.State = "applied"
				}
			case recApplyAborted:
				if cur != nil && r.N == n {
					cur.State = "rolled back"
				}
			case recUndoDone:
				if cur != nil && r.N == n {
					cur.State = "undone"
				}
			}
		}
		if cur != nil && (best == nil || cur.Time.After(best.Time)) {
			best = cur
		}
	}
	return best
}

// DeleteRefs removes refs/yolop/apply/<sessionID>/* from the repository
// of repoDir and returns their names. Other refs are untouched.
func DeleteRefs(ctx context.Context, repoDir, sessionID string, dryRun bool) ([]string, error) {
	refs, err := ListRefs(ctx, repoDir, sessionID)
	if err != nil || len(refs) == 0 || dryRun {
		return refs, err
	}
	var in strings.Builder
	for _, r := range refs {
		in.WriteString("delete " + r + "\n")
	}
	if _, err := git.New(repoDir).RunInput(ctx, []byte(in.String()), "update-ref", "--stdin"); err != nil {
		return nil, fmt.Errorf("delete apply refs of session %s: %w", sessionID, err)
	}
	return refs, nil
}

// ListRefs lists refs/yolop/apply/<sessionID>/* in repoDir's repository.
func ListRefs(ctx context.Context, repoDir, sessionID string) ([]string, error) {
	if sessionID == "" || strings.ContainsAny(sessionID, "/*?[\\ ") {
		return nil, fmt.Errorf("%w: session id %q", snapshot.ErrBadName, sessionID)
	}
	out, err := git.New(repoDir).Run(ctx, "for-each-ref", "--format=%(refname)", ApplyRefPrefix+sessionID+"/")
	if err != nil {
		return nil, fmt.Errorf("list apply refs of session %s: %w", sessionID, err)
	}
	var refs []string
	for _, l := range strings.Split(git.Trim(out), "\n") {
		if l != "" {
			refs = append(refs, l)
		}
	}
	return refs, nil
}

// KeptRef is a ref the session keeps in the repository for its applies.
type KeptRef struct {
	Name string // the full ref name
	Tree string
	Why  string
}

// KeptRefs lists the session's apply refs in repoDir's repository with
// what needs each, from the journals of every checkout it was applied to.
func KeptRefs(ctx context.Context, dataDir, repoDir, sessionID string) ([]KeptRef, error) {
	refs, err := ListRefs(ctx, repoDir, sessionID)
	if err != nil || len(refs) == 0 {
		return nil, err
	}
	type apply struct{ target, state string }
	applies := map[int]*apply{}
	dirs, err := os.ReadDir(filepath.Join(dataDir, "apply"))
	if err != nil && !os.IsNotExist(err) { // absent: no apply was journaled
		return nil, fmt.Errorf("read apply journals: %w", err)
	}
	for _, d := range dirs {
		recs, err := readJournal(filepath.Join(dataDir, "apply", d.Name(), "journal.jsonl"))
		if err != nil {
			continue
		}
		for _, r := range recs {
			if r.SessionID != sessionID {
				continue
			}
			if r.Type == recApplyStarted {
				applies[r.N] = &apply{target: r.Target}
			}
			if a := applies[r.N]; a != nil {
				a.state = r.Type
			}
		}
	}
	var out []KeptRef
	for _, ref := range refs {
		tree, terr := treeOf(ctx, git.New(repoDir), ref)
		rest := strings.TrimPrefix(ref, ApplyRefPrefix+sessionID+"/")
		num, forced := strings.CutSuffix(rest, "-before-undo")
		n, _ := strconv.Atoi(num)
		a := applies[n]
		why := "not named by any apply journal"
		switch {
		case forced:
			why = fmt.Sprintf("your edits a forced undo of apply %d overwrote", n)
		case a == nil:
		case a.state == recApplyDone || a.state == recUndoStarted:
			why = fmt.Sprintf("apply %d to %s: apply --undo puts these files back", n, a.target)
		case a.state == recApplyStarted:
			why = fmt.Sprintf("apply %d to %s, unfinished: the next apply or session open settles it", n, a.target)
		default:
			why = fmt.Sprintf("apply %d to %s, %s: your checkout's files before it (yours: kept after the session; drop with git update-ref -d)", n, a.target, map[string]string{recApplyAborted: "rolled back", recUndoDone: "undone"}[a.state])
		}
		if terr != nil {
			why += fmt.Sprintf(" (its tree cannot be read: %v)", terr)
		}
		out = append(out, KeptRef{Name: ref, Tree: tree, Why: why})
	}
	return out, nil
}

// RepairAtOpen is Repair as a session's open runs it: for the checkout
// the session was started from ("" for a session without a worktree:
// nothing), with what it did, or why it could not yet, as notes for the
// host. A repair another apply holds the lock for is that apply's.
func RepairAtOpen(ctx context.Context, dataDir, sessionID, checkout string) []string {
	if checkout == "" {
		return nil
	}
	notes, err := Repair(ctx, dataDir, sessionID, checkout)
	if err != nil && !errors.Is(err, ErrLocked) {
		return []string{"an interrupted apply to " + checkout + " could not be repaired yet: " + err.Error()}
	}
	return notes
}
