package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// plan is a resolved restore request.
type plan struct {
	action     Action
	target     string // checkpoint id ("" for redo; the tip for a branch)
	branch     string // branch entered (ActionBranch)
	branchLeft string // branch left (ActionBranch)
	mode       Mode
	newHead    string
	targetTree string
	prompt     string   // prompt put back in the composer
	undone     []string // turns whose effects the restore undoes, oldest first
	onConflict string   // the in-place conflict choice (Request.OnConflict)
}

// resolveRewindLocked validates a rewind target and picks the default mode.
func (c *Controller) resolveRewindLocked(req Request) (*timelineCheckpoint, Mode, error) {
	id := normalizeID(req.Target)
	if id == "" {
		return nil, "", &Error{Code: CodeUnknownCheckpt, Msg: "which checkpoint? run /rewind to list them"}
	}
	cp := c.state.Checkpoints[id]
	if cp == nil {
		return nil, "", &Error{Code: CodeUnknownCheckpt, Msg: fmt.Sprintf("unknown checkpoint %s: run /rewind to list the checkpoints of this session", id)}
	}
	if cp.ID == c.running || cp.Open {
		return nil, "", &Error{Code: CodeTurnRunning, Msg: fmt.Sprintf("checkpoint %s belongs to the turn that is still running; wait for it to end", id)}
	}
	hasWS := cp.Snapshot != nil && c.cfg.Snapshots != nil
	mode := req.Mode
	if mode == "" {
		mode = c.defaultModeLocked(cp)
	}
	if mode.HasWorkspace() && !hasWS {
		why := cp.CaptureError
		if why == "" {
			why = c.cfg.NoWorkspace
		}
		return nil, "", &Error{Code: CodeNoWorkspace, Msg: fmt.Sprintf("checkpoint %s has no workspace snapshot (%s), so only `/rewind %s conversation` is possible", id, why, id)}
	}
	return cp, mode, nil
}

// defaultModeLocked is the mode of a rewind that names none: both when the
// checkpoint has a complete workspace snapshot, else conversation.
func (c *Controller) defaultModeLocked(cp *timelineCheckpoint) Mode {
	if cp != nil && cp.Snapshot != nil && c.cfg.Snapshots != nil {
		return ModeBoth
	}
	return ModeConversation
}

type timelineCheckpoint = timeline.Checkpoint

// planLocked resolves a request against the current state.
func (c *Controller) planLocked(req Request) (*plan, error) {
	// Hosts parse modes with ParseMode, but a Request is public API: an
	// unchecked mode would be previewed as a restore that changes nothing
	// and journaled as an intent the timeline rejects.
	switch req.Mode {
	case "", ModeBoth, ModeConversation, ModeWorkspace:
	default:
		return nil, &Error{Code: CodeBadMode, Msg: fmt.Sprintf("unknown mode %q: use both, conversation or workspace", req.Mode)}
	}
	switch req.Action {
	case ActionRewind, ActionUndo:
		if req.Action == ActionUndo && req.Target == "" {
			if c.state.Head == "" {
				return nil, &Error{Code: CodeNothingToUndo, Msg: "nothing to undo: no turn has finished on the active branch"}
			}
			req.Target = c.state.Head
		}
		if req.Action == ActionUndo && req.Mode != "" {
			return nil, &Error{Code: CodeBadMode, Msg: "/undo takes no mode; use /rewind <checkpoint> <mode>"}
		}
		cp, mode, err := c.resolveRewindLocked(req)
		if err != nil {
			return nil, err
		}
		p := &plan{action: req.Action, target: cp.ID, mode: mode, newHead: c.state.Head}
		if !c.state.Active(cp.ID) {
			// A checkpoint of an abandoned branch: the restore switches
			// to that branch and rewinds there, in one preview. The head
			// before the turn is the same whichever branch the rewind
			// starts from; a workspace-only rewind moves no conversation.
			c.crossBranchLocked(p)
		}
		for _, t := range c.turnsDiffLocked(c.state.Head, cp.Parent) {
			p.undone = append(p.undone, t.ID)
		}
		if mode.HasConversation() {
			p.newHead = cp.Parent
			p.prompt = c.wholePromptLocked(cp)
		}
		if mode.HasWorkspace() {
			p.targetTree = cp.Snapshot.Tree
		}
		return p, nil
	case ActionBranch:
		return c.planBranchLocked(req)
	case ActionRedo:
		r := c.state.Redo
		if r == nil {
			msg := "nothing to redo: /redo restores what the last /rewind or /undo abandoned, until a new turn starts"
			if len(c.state.Order) > len(c.state.ActiveChain()) {
				msg += "; abandoned turns stay reachable: /branches lists them and /branch bN returns to one"
			}
			return nil, &Error{Code: CodeNothingToRedo, Msg: msg}
		}
		if req.Mode != "" {
			return nil, &Error{Code: CodeBadMode, Msg: "/redo takes no mode; it restores exactly what the last restore changed"}
		}
		p := &plan{action: ActionRedo, mode: Mode(r.Mode), newHead: c.state.Head}
		if p.mode.HasConversation() {
			p.newHead = r.Head
		}
		if p.mode.HasWorkspace() {
			if r.Recovery == nil || c.cfg.Snapshots == nil {
				return nil, &Error{Code: CodeNoWorkspace, Msg: "the last restore has no recovery snapshot of the files, so there is nothing to redo for the workspace"}
			}
			p.targetTree = r.Recovery.Tree
		}
		return p, nil
	}
	return nil, &Error{Code: CodeBadMode, Msg: fmt.Sprintf("unknown action %q", req.Action)}
}

// chainIDs returns the ids from the root to head.
func (c *Controller) chainLocked(head string) []*timelineCheckpoint {
	if head == "" {
		return nil
	}
	return c.state.Chain(head)
}

func (c *Controller) turnsDiffLocked(from, to string) []TurnRef {
	keep := map[string]bool{}
	for _, cp := range c.chainLocked(to) {
		keep[cp.ID] = true
	}
	out := []TurnRef{}
	for _, cp := range c.chainLocked(from) {
		if !keep[cp.ID] {
			out = append(out, TurnRef{ID: cp.ID, Title: label(cp.Prompt), Prompt: cp.Prompt, PromptBytes: cp.PromptBytes})
		}
	}
	return out
}

// chainParentLocked is the parent of checkpoint id ("" for the root or an
// unknown id).
func (c *Controller) chainParentLocked(id string) string {
	if cp := c.state.Checkpoints[id]; cp != nil {
		return cp.Parent
	}
	return ""
}

// externalEffectsLocked lists the calls of tools that act outside the
// workspace (MCP tools) made by the given turns: a restore does not undo
// them.
func (c *Controller) externalEffectsLocked(turns []TurnRef) []Warning {
	if len(turns) == 0 {
		return nil
	}
	in := map[string]bool{}
	for _, t := range turns {
		in[t.ID] = true
	}
	var out []Warning
	seen := map[string]bool{}
	for _, ev := range c.cfg.Store.Events() {
		if !in[ev.Turn] || ev.Type != agent.EventToolResult || !bytes.Contains(ev.Data, []byte(`"external":true`)) {
			continue
		}
		var d agent.ToolResultData
		if json.Unmarshal(ev.Data, &d) != nil || !d.External || seen[ev.Turn+"\x00"+d.Name] {
			continue
		}
		seen[ev.Turn+"\x00"+d.Name] = true
		out = append(out, Warning{Kind: "external_effects", Turn: ev.Turn, Tool: d.Name})
	}
	return out
}

// Preview describes exactly what a restore will change and issues a token.
// It first captures a durable recovery checkpoint of the current workspace;
// if that fails nothing else happens.
func (c *Controller) Preview(ctx context.Context, req Request) (*Preview, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refuseReadOnly(); err != nil {
		return nil, err
	}
	if err := c.checkOnConflict(req); err != nil {
		return nil, err
	}
	p, err := c.planLocked(req)
	if err != nil {
		return nil, err
	}
	p.onConflict = req.OnConflict
	store, err := loadPreviews(c.cfg.Dir)
	if err != nil {
		return nil, err
	}
	// A new preview supersedes every earlier unconfirmed one: their
	// tokens stop working and their recovery refs are removed.
	if err := c.expirePreviewsLocked(ctx, store, "a newer preview replaced it"); err != nil {
		return nil, err
	}
	rec := previewRecord{Session: c.cfg.SessionID, Action: p.action, Target: p.target, Branch: p.branch, Mode: p.mode, Head: c.state.Head, NewHead: p.newHead, TargetTree: p.targetTree, Prompt: p.prompt, Created: c.cfg.Now().UTC(), OnConflict: p.onConflict}
	pv := &Preview{Action: p.action, Target: p.target, Mode: p.mode, TurnsLeaving: []TurnRef{}, Paths: []PathChange{}, Warnings: []Warning{}, Excluded: []string{}, Branch: p.branch, BranchLeft: p.branchLeft}
	if p.action == ActionBranch {
		pv.Target = p.branch
	}
	if c.reverter() != nil && p.mode.HasWorkspace() {
		pv.InPlace, pv.OnConflict = true, p.onConflict
	}
	if cp := c.state.Checkpoints[p.target]; req.Mode == "" && p.mode == ModeConversation && c.cfg.Snapshots != nil && cp != nil && cp.Snapshot == nil && (p.action == ActionRewind || p.action == ActionUndo) {
		// The default of both fell back to the conversation: say why, or
		// the user takes the files for restored.
		why := cp.CaptureError
		if why == "" {
			why = "it was not captured"
		}
		pv.Warnings = append(pv.Warnings, Warning{Kind: WarnConversationOnly, Turn: cp.ID,
			Message: fmt.Sprintf("checkpoint %s has no workspace snapshot (%s): only the conversation is restored, the files stay as they are", cp.ID, why)})
	}
	if cp := c.state.Checkpoints[p.target]; cp != nil && p.mode.HasWorkspace() && len(cp.LeftOut) > 0 && (p.action == ActionRewind || p.action == ActionUndo) {
		// Never presented as exact: the files it left out stay as they are.
		for _, path := range cp.LeftOut {
			pv.Warnings = append(pv.Warnings, Warning{Kind: WarnPartial, Path: path, Turn: cp.ID,
				Message: PartialText(cp.ID, cp.LeftOut) + ": " + stayText(len(cp.LeftOut))})
		}
	}
	if p.mode.HasConversation() {
		pv.TurnsLeaving = c.turnsDiffLocked(c.state.Head, p.newHead)
		pv.TurnsReturning = c.turnsDiffLocked(p.newHead, c.state.Head)
	}
	if p.action != ActionRedo {
		// What the undone turns did outside the workspace stays done.
		undone := c.turnsDiffLocked(c.state.Head, c.chainParentLocked(p.target))
		pv.Warnings = append(pv.Warnings, c.externalEffectsLocked(undone)...)
	}
	if c.cfg.Snapshots != nil {
		// previews.json is convenience state that may be lost; the
		// timeline knows every recovery name a restore used, and reusing
		// one would move a ref the redo slot or a past restore points to.
		n := max(store.NextRecovery, c.state.NextRestore)
		name := fmt.Sprintf("r%d", n)
		// Writes through mmap raise no watcher event: the recovery
		// point of a restore always walks the whole tree.
		snap, err := c.cfg.Snapshots.Capture(snapshot.WithWalk(ctx), name)
		if err != nil && !p.mode.HasWorkspace() {
			// A conversation-only restore touches no file: it goes ahead
			// when the files cannot be captured (a full disk, a locked
			// repository) — exactly when dropping a bad turn matters —
			// and says what is not kept.
			pv.Warnings = append(pv.Warnings, Warning{Kind: WarnNoRecovery,
				Message: fmt.Sprintf("the current files could not be captured (%s): the conversation is restored, but no recovery checkpoint of the files is kept, so returning later (/redo, /branch) brings back the conversation only", captureReason(err))})
		} else if err != nil {
			return nil, &Error{Code: CodeCaptureFailed, Msg: fmt.Sprintf("could not capture a recovery checkpoint of the current files (%s); nothing was changed", captureReason(err)), Err: err}
		} else {
			c.cfg.Failpoint("preview.after_capture")
			store.NextRecovery = n + 1
			rec.Recovery = &timeline.SnapshotRef{Tree: snap.Tree, Ref: snap.Ref}
			rec.RecoveryName = name
			pv.Recovery = name
		}
		var outcomes []snapshot.PathOutcome
		if rv := c.reverter(); rv != nil && p.mode.HasWorkspace() {
			outs, warns, err := c.planInPlaceLocked(ctx, rv, p, snap.Tree, req.OnConflict)
			if err != nil {
				c.dropScratch(ctx, name)
				return nil, err
			}
			outcomes, rec.TargetTree = outs, p.targetTree
			pv.Warnings = append(pv.Warnings, warns...)
			if c.cfg.PreviewWarnings != nil {
				pv.Warnings = append(pv.Warnings, c.cfg.PreviewWarnings(p.target, p.undone)...)
			}
		}
		if p.mode.HasWorkspace() {
			chk, err := c.cfg.Snapshots.CheckRestore(ctx, snap.Tree, p.targetTree)
			if why := blockedReason(err); why != "" {
				// The confirm could only fail: no token. The recovery
				// snapshot taken for it is not needed.
				c.dropScratch(ctx, name)
				return nil, &Error{Code: CodeBlocked, Msg: blockedMsg(why, p, "nothing was changed"), Err: err}
			}
			var gone *snapshot.MissingObjectError
			if errors.As(err, &gone) {
				// Its objects were pruned from the repository (refs deleted
				// by hand, then git gc). Listings say so from now on.
				c.notePrunedLocked(p.targetTree, true)
				what := p.target
				if what == "" {
					what = "the state to return to"
				}
				return nil, &Error{Code: CodeNoWorkspace, Msg: fmt.Sprintf("the files of %s are gone from the repository (its snapshot %s was pruned, e.g. by git gc after refs/yolop was deleted); only a conversation restore is possible; nothing was changed", what, git.ShortOID(p.targetTree)), Err: err}
			}
			if err != nil {
				return nil, &Error{Code: CodeCaptureFailed, Msg: "could not compare the files with the checkpoint: " + err.Error() + "; nothing was changed", Err: err}
			}
			c.notePrunedLocked(p.targetTree, false)
			// A nested repository or submodule now in the worktree is left
			// alone even where the checkpoint holds files: say so instead
			// of listing paths the restore will not touch.
			alone := chk.LeftAlone
			ignored := map[string]bool{}
			for _, path := range chk.Ignored {
				ignored[path] = true
			}
			for _, ch := range chk.Changes {
				pc := NewPathChange(ch.Path, string(ch.Kind))
				pc.Ignored = ignored[ch.Path]
				pv.Paths = append(pv.Paths, pc)
			}
			sortChanges(pv.Paths)
			if c.reverter() != nil {
				applyOutcomes(pv, outcomes)
				rec.Paths = pv.Paths
			}

			// Paths changed since yolop last left the workspace were not
			// made by the agent; the recovery checkpoint keeps them, but
			// say so.
			if known := c.knownFilesLocked(); known != "" && known != snap.Tree {
				outside, err := c.cfg.Snapshots.Diff(ctx, known, snap.Tree)
				if err != nil {
					return nil, &Error{Code: CodeCaptureFailed, Msg: "could not compare the files with the end of the last turn: " + err.Error() + "; nothing was changed", Err: err}
				}
				for _, ch := range outside {
					w := Warning{Kind: "changed_outside_turns", Path: ch.Path}
					if !utf8.ValidString(ch.Path) {
						w.PathBytes = []byte(ch.Path)
					}
					pv.Warnings = append(pv.Warnings, w)
				}
			}
			list, err := c.cfg.Snapshots.Excluded(ctx)
			if err != nil {
				return nil, &Error{Code: CodeCaptureFailed, Msg: "could not list the paths a restore leaves alone: " + err.Error() + "; nothing was changed", Err: err}
			}
			// A file restored as an ignored file is not left alone.
			for _, e := range list {
				if !ignored[e] {
					pv.Excluded = append(pv.Excluded, e)
				}
			}
			for _, d := range alone {
				if !slices.Contains(pv.Excluded, d+"/") {
					pv.Excluded = append(pv.Excluded, d+"/")
				}
			}
			for _, w := range pv.Warnings {
				if w.Kind == WarnPartial && !slices.Contains(pv.Excluded, w.Path) {
					pv.Excluded = append(pv.Excluded, w.Path)
				}
			}
		}
	}
	pv.Warnings = append(pv.Warnings, c.effectsOutsideLocked(p.undone)...)
	rec.Token = newToken()
	pv.Token = rec.Token
	pv.Command = confirmCommand(p, rec.Token)
	store.Previews = append(store.Previews, rec)
	if err := store.save(c.cfg.Dir); err != nil {
		return nil, fmt.Errorf("save preview: %w", err)
	}
	return pv, nil
}

// KnownFiles returns the tree yolop itself last left in the workspace,
// "" when it is unknown.
func (c *Controller) KnownFiles() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.knownFilesLocked()
}

// FilesSource is a snapshot that records the session's files at some
// point: where a worktree that was deleted is filled from.
type FilesSource struct {
	Tree string
	// What says which moment it records ("as the last turn or restore
	// left them", "as turn cp2 left them", "as they were before turn cp3").
	What string
	// Missing are the turns that ran after it whose end was never
	// captured: what they changed is in no snapshot (oldest first).
	Missing []string
}

// FilesLeft lists the snapshots of the session's files, the newest
// moment first: the tree yolop last left in the workspace when it is
// known, then, walking the turns back from the newest, each turn's end
// and start snapshot. A caller takes the first whose tree still exists.
func (c *Controller) FilesLeft() []FilesSource {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []FilesSource
	if k := c.knownFilesLocked(); k != "" {
		out = append(out, FilesSource{Tree: k, What: "as the last turn or restore left them"})
	}
	order := c.state.Order
	for i := len(order) - 1; i >= 0; i-- {
		cp := c.state.Checkpoints[order[i]]
		if cp == nil {
			continue
		}
		if cp.End != nil {
			out = append(out, FilesSource{Tree: cp.End.Tree, What: "as turn " + cp.ID + " left them", Missing: slices.Clone(order[i+1:])})
		}
		if cp.Snapshot != nil {
			out = append(out, FilesSource{Tree: cp.Snapshot.Tree, What: "as they were before turn " + cp.ID, Missing: slices.Clone(order[i:])})
		}
	}
	return out
}

// knownFilesLocked returns the tree yolop itself last left in the
// workspace (see timeline.State.KnownFiles), "" when it is unknown.
func (c *Controller) knownFilesLocked() string {
	return c.state.KnownFiles
}

func confirmCommand(p *plan, token string) string {
	return describe(previewRecord{Action: p.action, Target: p.target, Branch: p.branch, Mode: p.mode, OnConflict: p.onConflict}) + " --confirm " + token
}

func describe(r previewRecord) string {
	var s string
	switch r.Action {
	case ActionUndo:
		s = "/undo"
	case ActionRedo:
		s = "/redo"
	case ActionBranch:
		s = fmt.Sprintf("/branch %s %s", r.Branch, r.Mode)
	default:
		s = fmt.Sprintf("/rewind %s %s", r.Target, r.Mode)
	}
	return s + onConflictFlag(r.OnConflict)
}

// onConflictFlag is the command-line form of an in-place conflict choice.
func onConflictFlag(choice string) string {
	switch choice {
	case OnConflictMarkers:
		return " --on-conflict markers"
	case OnConflictOverwrite:
		return " --overwrite-mine"
	}
	return ""
}

// checkOnConflict refuses a conflict choice outside a session in place,
// or one yolop does not know.
func (c *Controller) checkOnConflict(req Request) error {
	switch req.OnConflict {
	case OnConflictKeep:
		return nil
	case OnConflictMarkers, OnConflictOverwrite:
	default:
		return &Error{Code: CodeBadMode, Msg: fmt.Sprintf("unknown conflict choice %q: use --on-conflict markers or --overwrite-mine", req.OnConflict)}
	}
	if c.reverter() == nil {
		return &Error{Code: CodeBadMode, Msg: onConflictFlag(req.OnConflict)[1:] + " applies to sessions in place, whose restores keep your own edits; this session's restores return its own worktree exactly"}
	}
	if req.Action == ActionRewind || req.Action == ActionUndo || req.Action == ActionBranch || req.Action == ActionRedo {
		if req.Mode == ModeConversation {
			return &Error{Code: CodeBadMode, Msg: onConflictFlag(req.OnConflict)[1:] + " chooses what happens to files; a conversation-only restore changes none"}
		}
	}
	return nil
}

// Confirm applies a previewed restore. It refuses, changing nothing, while
// something can still write the workspace, or when the token is unknown,
// used, for another restore, or stale.
func (c *Controller) Confirm(ctx context.Context, req Request, token string) (*Restored, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refuseReadOnly(); err != nil {
		return nil, err
	}
	if c.running != "" {
		return nil, &Error{Code: CodeTurnRunning, Msg: fmt.Sprintf("turn %s is still running and can write the workspace; wait for it to end or cancel it (Ctrl+C in the TUI, session/cancel from an editor), then confirm again", c.running)}
	}
	if c.cfg.Writers != nil {
		if ws := c.cfg.Writers.Active(); len(ws) > 0 {
			var parts, stops []string
			for _, w := range ws {
				if w.Kind == tools.WriterSurvivor {
					parts = append(parts, fmt.Sprintf("process %d %q, left running by an earlier yolop process of this session, which could not be ended (end it with `kill -9 %d` or `/tasks stop %s`)", w.PID, w.Command, w.PID, w.ID))
					continue
				}
				parts = append(parts, fmt.Sprintf("%s %q (task %s, running for %s)", w.Kind, w.Command, w.ID, c.cfg.Now().Sub(w.Started).Round(time.Second)))
				stops = append(stops, "`/tasks stop "+w.ID+"`")
			}
			msg := "a process can still write the workspace: " + strings.Join(parts, "; ") + ". "
			switch len(stops) {
			case 0:
				msg += "End it or wait for it to finish, then confirm again"
			case 1:
				msg += "Stop it with " + stops[0] + " or wait for it to finish, then confirm again"
			default:
				msg += "Stop them with " + strings.Join(stops, ", ") + " or wait for them to finish, then confirm again"
			}
			return nil, &Error{Code: CodeWriterActive, Msg: msg}
		}
	}
	store, err := loadPreviews(c.cfg.Dir)
	if err != nil {
		return nil, err
	}
	rec := store.find(token)
	if rec == nil || rec.Session != c.cfg.SessionID {
		return nil, &Error{Code: CodeUnknownToken, Msg: fmt.Sprintf("unknown confirmation token %q for session %s: run the preview again to get a token", token, c.cfg.SessionID)}
	}
	if rec.Used {
		return nil, &Error{Code: CodeTokenUsed, Msg: fmt.Sprintf("token %s was already used; each preview confirms once. Run the preview again", token)}
	}
	if !c.sameRequestLocked(*rec, req) {
		return nil, &Error{Code: CodeTokenMismatch, Msg: fmt.Sprintf("token %s confirms `%s`, not this command; send `%s --confirm %s` or run a new preview", token, describe(*rec), describe(*rec), token)}
	}
	if rec.Head != c.state.Head {
		return nil, &Error{Code: CodeConversationMove, Msg: "the conversation moved since the preview (a turn ran or another restore happened); run the preview again"}
	}
	if rec.Expired != "" {
		return nil, &Error{Code: CodeTokenExpired, Msg: fmt.Sprintf("token %s can no longer be used: %s. Run the preview again to get a new token", token, rec.Expired)}
	}
	// Only a restore that writes files cares whether they moved since the
	// preview; a conversation-only restore leaves them as they are.
	if c.cfg.Snapshots != nil && rec.Recovery != nil && rec.Mode.HasWorkspace() {
		current, err := c.cfg.Snapshots.Capture(snapshot.WithWalk(ctx), "") // a check only: no ref
		if err != nil {
			return nil, &Error{Code: CodeCaptureFailed, Msg: fmt.Sprintf("could not check the files before restoring (%s); nothing was changed", captureReason(err)), Err: err}
		}
		if current.Tree != rec.Recovery.Tree {
			return nil, &Error{Code: CodeStalePreview, Msg: "workspace changed since the preview; run the preview again"}
		}
	}
	rec.Used = true
	if err := store.save(c.cfg.Dir); err != nil {
		return nil, fmt.Errorf("save preview: %w", err)
	}
	restoreID := rec.RecoveryName
	if restoreID == "" {
		restoreID = "r-" + token
	}
	intent := timeline.Record{Type: timeline.TypeRestoreStarted, Restore: restoreID, Target: rec.Target, Mode: string(rec.Mode), OldHead: rec.Head, NewHead: rec.NewHead, AbandonedHead: rec.Head, Recovery: rec.Recovery, TargetTree: rec.TargetTree, Redo: rec.Action == ActionRedo}
	if err := c.append(intent); err != nil {
		return nil, err
	}
	c.cfg.Failpoint("restore.after_intent")

	changed, filesTree, indexWarning := 0, "", ""
	if rec.Mode.HasWorkspace() {
		res, err := c.cfg.Snapshots.Restore(ctx, snapshot.Snapshot{Tree: rec.Recovery.Tree, Ref: rec.Recovery.Ref}, rec.TargetTree)
		if err != nil {
			return nil, c.rollbackLocked(ctx, restoreID, rec, err)
		}
		changed, indexWarning = len(res.Changes), res.IndexWarning
		if res.Tree != "" && res.Tree != rec.TargetTree {
			filesTree = res.Tree
		}
	}
	c.cfg.Failpoint("restore.before_head")
	moved := intent
	moved.Type = timeline.TypeHeadMoved
	moved.Time = time.Time{}
	moved.FilesTree = filesTree
	if err := c.append(moved); err != nil {
		return nil, c.rollbackLocked(ctx, restoreID, rec, err)
	}
	c.cfg.Failpoint("restore.after_head")

	// Every other outstanding token is stale now (the head or files
	// moved); drop them and the refs only they needed.
	if err := c.expirePreviewsLocked(ctx, store, "another restore was confirmed after it"); err != nil {
		return nil, err
	}
	out := &Restored{Action: rec.Action, Target: rec.Target, Mode: rec.Mode, PathsChanged: changed, Paths: rec.Paths, Warning: indexWarning}
	if rec.Action == ActionBranch {
		out.Target = rec.Branch
	}
	if rec.Mode.HasConversation() && rec.Action != ActionRedo {
		out.Prompt = rec.Prompt
	}
	out.Notice = c.noticeText(*rec, intent, changed)
	// Workspace-only restores tell the model that files changed under it;
	// conversation restores replace the context itself. A branch entered
	// with its files is told too: branches can share their head (a
	// workspace-only restore left one), so the notices on that head may
	// describe other files than the ones the branch was left with.
	toModel := rec.Mode == ModeWorkspace || (rec.Action == ActionBranch && rec.Mode.HasWorkspace() && c.headToldOfFilesLocked())
	if err := c.cfg.Runtime.Note(c.state.Head, agent.NoticeData{Kind: "restore", Text: out.Notice, Model: toModel}); err != nil {
		out.Warning = strings.TrimPrefix(out.Warning+"; "+fmt.Sprintf("the restore succeeded, but its notice could not be recorded (%v): the model is not told about it; mention it in your next prompt", err), "; ")
	}
	c.reseedLocked()
	if w := c.saveDigestLocked(); w != "" {
		out.Warning = strings.TrimPrefix(out.Warning+"; "+w, "; ")
	}
	return out, nil
}

// headToldOfFilesLocked reports whether the model context of the active
// head holds a notice that files changed under it (a workspace-only
// restore made while that head was active).
func (c *Controller) headToldOfFilesLocked() bool {
	for _, ev := range c.activeEventsLocked() {
		if ev.Type != agent.EventNotice || ev.Turn != c.state.Head {
			continue
		}
		var d agent.NoticeData
		if json.Unmarshal(ev.Data, &d) == nil && d.Model && d.Kind == "restore" {
			return true
		}
	}
	return false
}

// sameRequestLocked reports whether a confirm line names the previewed
// restore. A rewind line without a mode names the target's default mode,
// so it confirms only a preview of that mode.
func (c *Controller) sameRequestLocked(r previewRecord, req Request) bool {
	if r.Action != req.Action || r.OnConflict != req.OnConflict {
		return false
	}
	if req.Action == ActionBranch {
		if strings.ToLower(strings.TrimSpace(req.Target)) != r.Branch {
			return false
		}
		mode := req.Mode
		if mode == "" {
			// The default of the preview: both when the branch's files
			// were captured when it was left.
			mode = ModeConversation
			for _, b := range c.branchesLocked() {
				if b.ID == r.Branch && b.End != nil && c.cfg.Snapshots != nil {
					mode = ModeBoth
				}
			}
		}
		return mode == r.Mode
	}
	if req.Action == ActionRewind {
		if normalizeID(req.Target) != r.Target {
			return false
		}
		mode := req.Mode
		if mode == "" {
			mode = c.defaultModeLocked(c.state.Checkpoints[r.Target])
		}
		if mode != r.Mode {
			return false
		}
	}
	return true
}

// rollbackLocked puts the files back from the recovery snapshot after a
// failed restore and closes the intent. The head never moved.
func (c *Controller) rollbackLocked(ctx context.Context, restoreID string, rec *previewRecord, cause error) error {
	// The snapshot engine's own advice about the worktree's state is moot
	// here: the rollback below settles it and says how.
	shown := cause
	var re *snapshot.RestoreError
	if errors.As(cause, &re) && re.Err != nil {
		shown = re.Err
	}
	msg := fmt.Sprintf("restore failed (%v)", shown)
	if why := blockedReason(cause); why != "" && (re == nil || !re.Applied) {
		// Found before anything was written (the entry in the way
		// appeared after the preview).
		msg = blockedMsg(why, &plan{action: rec.Action, target: rec.Target, branch: rec.Branch, mode: rec.Mode}, "nothing was changed")
		if err := c.append(timeline.Record{Type: timeline.TypeRestoreAborted, Restore: restoreID, Reason: cause.Error()}); err != nil {
			msg += fmt.Sprintf(" (recording the abort failed too: %v; the next open repairs it)", err)
		}
		return &Error{Code: CodeBlocked, Msg: msg, Err: cause}
	}
	if errors.Is(cause, context.Canceled) {
		msg = "interrupted: the restore was stopped"
	}
	if rec.Mode.HasWorkspace() && rec.Recovery != nil {
		ctx = context.WithoutCancel(ctx)
		cur, err := c.cfg.Snapshots.Capture(snapshot.WithWalk(ctx), rollbackPrefix+restoreID)
		if err == nil {
			err = c.putBackLocked(ctx, cur, rec.Recovery.Tree, rec.TargetTree)
		}
		if err == nil {
			c.dropScratch(ctx, rollbackPrefix+restoreID)
		}
		if err != nil {
			msg += fmt.Sprintf("; putting the files back also failed (%v): they are kept at %s (git read-tree/checkout of that tree recovers them)", err, rec.Recovery.Ref)
		} else {
			msg += "; the files were put back as they were before the preview and the conversation is unchanged"
		}
	}
	if err := c.append(timeline.Record{Type: timeline.TypeRestoreAborted, Restore: restoreID, Reason: cause.Error()}); err != nil {
		// The next open closes the intent from the files' state.
		msg += fmt.Sprintf(" (recording the abort failed too: %v; the next open repairs it)", err)
	}
	return &Error{Code: CodeRestoreFailed, Msg: msg, Err: cause}
}

func (c *Controller) noticeText(rec previewRecord, intent timeline.Record, changed int) string {
	var what string
	switch rec.Action {
	case ActionRedo:
		what = "Redo: restored the state abandoned by the last restore"
	case ActionUndo:
		what = fmt.Sprintf("Undo: rewound to %s", rec.Target)
	case ActionBranch:
		tip := rec.Target
		if tip == "" {
			tip = "the start"
		}
		what = fmt.Sprintf("Switched to branch %s (tip %s)", rec.Branch, tip)
	default:
		what = fmt.Sprintf("Rewound to %s", rec.Target)
		if rec.Branch != "" && rec.Mode.HasConversation() {
			what = fmt.Sprintf("Switched to branch %s and rewound to %s", rec.Branch, rec.Target)
		} else if rec.Branch != "" {
			what = fmt.Sprintf("Restored the files of %s (branch %s)", rec.Target, rec.Branch)
		}
	}
	// Each state is named once: what moved, then what stayed.
	var moved []string
	if rec.Mode.HasConversation() {
		left := len(c.turnsDiffLocked(intent.OldHead, intent.NewHead))
		back := len(c.turnsDiffLocked(intent.NewHead, intent.OldHead))
		if back > 0 {
			moved = append(moved, Plural(back, "turn", "turns")+" returned to the active conversation")
		}
		if left > 0 || back == 0 {
			moved = append(moved, Plural(left, "turn", "turns")+" left the active conversation")
		}
	}
	if rec.Mode.HasWorkspace() {
		moved = append(moved, Plural(changed, "path", "paths")+" restored")
	}
	text := fmt.Sprintf("%s (%s): %s", what, rec.Mode.Short(), strings.Join(moved, ", "))
	switch rec.Mode {
	case ModeConversation:
		text += "; files unchanged"
	case ModeWorkspace:
		text += "; conversation unchanged"
	}
	return text + ". " + RedoHint

}

// blockedMsg says what is in the way of a workspace restore, that nothing
// changed, and how to go on: move it away, or restore only the
// conversation where that is a choice.
func blockedMsg(why string, p *plan, outcome string) string {
	msg := "the files cannot be restored: " + why + ", then preview again; " + outcome
	if p.mode == ModeBoth {
		switch p.action {
		case ActionRewind, ActionUndo:
			if p.target != "" {
				msg += fmt.Sprintf(". To restore only the conversation, leaving the files as they are: /rewind %s conversation", p.target)
			}
		case ActionBranch:
			msg += fmt.Sprintf(". To switch only the conversation, leaving the files as they are: /branch %s conversation", p.branch)
		}
	}
	return msg
}

// blockedReason says why the worktree's state keeps a restore from going
// ahead (something in the way, a directory that is not writable, a path
// the tree may not hold), "" for other errors. The sentence carries no
// package prefix and ends where blockedMsg goes on.
func blockedReason(err error) string {
	var be *snapshot.BlockedError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &be):
		return be.Error()
	case errors.Is(err, snapshot.ErrConflict), errors.Is(err, snapshot.ErrUnsafePath):
		msg := err.Error()
		for _, s := range []error{snapshot.ErrConflict, snapshot.ErrUnsafePath} {
			if i := strings.Index(msg, s.Error()+": "); i >= 0 {
				msg = msg[i+len(s.Error())+2:]
			}
		}
		return strings.TrimSuffix(strings.TrimSuffix(msg, "; move it away and retry"), " and retry")
	}
	return ""
}

// wholePromptLocked returns cp's prompt, read from the event log when the
// timeline keeps only its start (timeline.ShortPrompt): the first
// user.message of cp's turn, or the file RunTurn kept it in when the turn
// ended before recording it. When neither has it, the kept start is
// returned: the composer then holds what the listing showed.
func (c *Controller) wholePromptLocked(cp *timeline.Checkpoint) string {
	if cp.PromptBytes <= int64(len(cp.Prompt)) {
		return cp.Prompt
	}
	whole := func(text string) bool {
		return int64(len(text)) == cp.PromptBytes && strings.HasPrefix(text, cp.Prompt)
	}
	for _, ev := range c.eventsAfterLocked(cp.SeqBefore) {
		if ev.Turn != cp.ID || ev.Type != agent.EventUser {
			continue
		}
		var d agent.UserData
		if err := json.Unmarshal(ev.Data, &d); err == nil && whole(d.Text) {
			return d.Text
		}
		break
	}
	if text, err := keptPrompt(c.cfg.Dir, cp.ID); err == nil && whole(text) {
		return text
	}
	return cp.Prompt
}
