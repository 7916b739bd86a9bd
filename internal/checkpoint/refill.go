package checkpoint

import (
	"context"
	"fmt"
	"strings"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// NewestFiles returns the newest of FilesLeft whose tree is still in the
// repository whose common git dir is common (a zero FilesSource when none
// is), and the short ids of the newer trees that are gone from it.
func (c *Controller) NewestFiles(ctx context.Context, common string) (FilesSource, []string) {
	var gone []string
	for _, f := range c.FilesLeft() {
		if _, err := git.New(common).Run(ctx, "cat-file", "-e", f.Tree+"^{tree}"); err != nil {
			gone = append(gone, git.ShortOID(f.Tree))
			continue
		}
		return f, gone
	}
	return FilesSource{}, gone
}

// Readded is a session worktree that was deleted and has just been added
// again on its branch.
type Readded struct {
	Path, Branch string
	Base         string // the commit the session's work started from
	CommonDir    string // the repository's common git dir
	// BranchRecreated: the branch was gone too and was made again at Base.
	BranchRecreated bool
	// Engine is the session's snapshot engine; nil when it has none, and
	// NoWorkspace then says why.
	Engine      *snapshot.Engine
	NoWorkspace string
	// ReadOnly says why the session is read-only ("" when it is not).
	ReadOnly string
}

// Refill puts back, into r, the files yolop last left there (the end of
// the last turn or restore; when that was never captured, the newest
// snapshot that still exists), so that nothing the session had is
// missing and no later checkpoint records the loss as the session's own
// change. It returns the note that says what happened.
func (c *Controller) Refill(ctx context.Context, r Readded) string {
	head := fmt.Sprintf("The session's worktree %s had been deleted; yolop added it again on branch %s", r.Path, r.Branch)
	if r.BranchRecreated {
		head = fmt.Sprintf("The session's worktree %s and its branch %s had been deleted; yolop made the branch again at the commit the session's work started from (%s) and added the worktree on it", r.Path, r.Branch, git.ShortOID(r.Base))
	}
	committed := "its committed files only"
	if r.BranchRecreated {
		committed = "the files of that commit only: the commits the branch had are not on it"
	}
	switch {
	case r.Engine == nil:
		return head + " (" + committed + ": snapshots are unavailable, " + r.NoWorkspace + ")."
	case r.ReadOnly != "":
		return head + " (" + committed + ": the session is read-only)."
	}
	from, gone := c.NewestFiles(ctx, r.CommonDir)
	if from.Tree == "" {
		why := "no snapshot records what it held"
		if len(gone) > 0 {
			why = fmt.Sprintf("the snapshots that recorded what it held (%s) are no longer in the repository", strings.Join(gone, ", "))
		}
		return head + " (" + committed + ": " + why + ")."
	}
	cur, err := r.Engine.Capture(ctx, "")
	if err == nil {
		_, err = r.Engine.Restore(ctx, cur, from.Tree)
	}
	if err != nil {
		return fmt.Sprintf("%s, but putting back the files %s failed (%v); they are in snapshot tree %s (git read-tree/checkout it, or rewind).", head, from.What, err, from.Tree)
	}
	note := head + " and put back the files " + from.What
	if r.BranchRecreated {
		note += " (what the branch had committed is there as uncommitted changes)"
	}
	note += "."
	if len(from.Missing) > 0 {
		them := "that turn"
		if len(from.Missing) > 1 {
			them = "those turns"
		}
		note += fmt.Sprintf(" The end of %s was never captured, so anything %s changed is missing.", strings.Join(from.Missing, ", "), them)
	}
	return note
}
