package checkpoint

import (
	"context"
	"fmt"
)

// PathDiff shows what confirming a preview does to one path: a unified
// diff from the current files (the preview's recovery checkpoint) to the
// restore's target.
type PathDiff struct {
	Path      string `json:"path"`
	Change    string `json:"change"`              // as in the preview's paths
	From      string `json:"from"`                // the recovery checkpoint ("r3"): the files now
	To        string `json:"to"`                  // the target ("cp2", or "redo")
	Patch     string `json:"patch"`               // git's patch, byte for byte
	Binary    bool   `json:"binary"`              // the patch has no readable lines
	TooLarge  bool   `json:"too_large,omitempty"` // text too large to diff: no patch
	OldSize   int64  `json:"old_size"`            // bytes; -1 where the path does not exist
	NewSize   int64  `json:"new_size"`
	Unchanged bool   `json:"unchanged,omitempty"`
}

// PreviewDiff returns the diff of one path that the preview with token
// would restore. It changes nothing and works for a spent token too, so a
// host can show the diff next to the preview it belongs to.
func (c *Controller) PreviewDiff(ctx context.Context, token, path string) (*PathDiff, error) {
	store, err := loadPreviews(c.cfg.Dir)
	if err != nil {
		return nil, err
	}
	rec := store.find(token)
	if rec == nil || rec.Session != c.cfg.SessionID {
		return nil, &Error{Code: CodeUnknownToken, Msg: fmt.Sprintf("unknown preview token %q for session %s: run the preview again", token, c.cfg.SessionID)}
	}
	if rec.Expired != "" {
		return nil, &Error{Code: CodeTokenExpired, Msg: fmt.Sprintf("preview %s can no longer be used: %s. Run the preview again", token, rec.Expired)}
	}
	if !rec.Mode.HasWorkspace() {
		return nil, &Error{Code: CodeNoWorkspace, Msg: "this restore leaves the files as they are (" + rec.Mode.Describe() + "): there is no file diff to show"}
	}
	if rec.Recovery == nil || rec.TargetTree == "" || c.cfg.Snapshots == nil {
		return nil, &Error{Code: CodeNoWorkspace, Msg: "this session has no workspace snapshots: there is no file diff to show"}
	}
	p, err := c.cfg.Snapshots.PatchPath(ctx, rec.Recovery.Tree, rec.TargetTree, path)
	if err != nil {
		return nil, fmt.Errorf("diff %s: %w", path, err)
	}
	to := rec.Target
	if rec.Action == ActionRedo || to == "" {
		to = string(rec.Action)
	}
	out := &PathDiff{Path: path, From: rec.RecoveryName, To: to, Patch: string(p.Patch), Binary: p.Binary, TooLarge: p.TooLarge, OldSize: p.OldSize, NewSize: p.NewSize}
	changes, err := c.cfg.Snapshots.Diff(ctx, rec.Recovery.Tree, rec.TargetTree)
	if err != nil {
		return nil, fmt.Errorf("diff %s: %w", path, err)
	}
	out.Unchanged = true
	for _, ch := range changes {
		if ch.Path == path {
			out.Change, out.Unchanged = string(ch.Kind), false
			break
		}
	}
	return out, nil
}
