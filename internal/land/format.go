package land

import (
	"fmt"
	"strings"

	"github.com/yolop-dev/yolop/internal/git"
)

// Text renders an apply for people: one line per path, then what happened
// and how to take it back. Every host prints this same text.
func (r *ApplyResult) Text() string {
	var b strings.Builder
	verb := "Applying"
	if r.DryRun {
		verb = "Dry run: applying"
	}
	fmt.Fprintf(&b, "%s session %s to %s\n", verb, r.SessionID, r.Target)
	if len(r.Paths) == 0 {
		b.WriteString("  (the session has no changes against its base)\n")
	}
	for _, p := range r.Paths {
		fmt.Fprintf(&b, "  %-16s %s\n", p.Outcome, git.DisplayPath(p.Path))
	}
	for _, n := range without(r.Notes, r.Repairs) {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	switch {
	case len(r.InTheWay) > 0 && len(r.Beneath) == len(r.InTheWay):
		fmt.Fprintf(&b, "%s beneath a symlink of your checkout, which apply never writes through; the notes say how to apply %s (nothing was written).\n", plural(len(r.InTheWay), "path lies", "paths lie"), map[bool]string{true: "it", false: "them"}[len(r.InTheWay) == 1])
	case len(r.InTheWay) > 0 && r.DryRun:
		fmt.Fprintf(&b, "%s in the way: where the session creates a file, your checkout has an ignored or write-blocklisted one (or a directory holding such files), and apply never overwrites or removes those; move %s away first (nothing was written).\n", plural(len(r.InTheWay), "path", "paths"), map[bool]string{true: "it", false: "them"}[len(r.InTheWay) == 1])
	case len(r.InTheWay) > 0:
		fmt.Fprintf(&b, "Refused: %s in the way (an ignored or write-blocklisted file of yours, or a directory holding such files, where the session creates a file); move %s away and apply again. Nothing was written.\n", plural(len(r.InTheWay), "path", "paths"), map[bool]string{true: "it", false: "them"}[len(r.InTheWay) == 1])
	case r.DryRun && r.Conflicts > 0 && r.Mode == OnConflictMarkers && len(r.Markers) == 0:
		fmt.Fprintf(&b, "%s would conflict: this apply keeps one side of %s, as the notes say (undo with %s).\n", plural(r.Conflicts, "path", "paths"), map[bool]string{true: "it", false: "each"}[r.Conflicts == 1], r.Hints.undo(r.SessionID))
	case r.DryRun && r.Conflicts > 0 && r.Mode == OnConflictMarkers:
		fmt.Fprintf(&b, "%s would conflict: this apply writes conflict markers into %s for you to resolve (undo with %s).\n", plural(r.Conflicts, "path", "paths"), strings.Join(displayPaths(r.Markers), ", "), r.Hints.undo(r.SessionID))
	case r.DryRun && r.Conflicts > 0 && len(r.Markers) == 0:
		fmt.Fprintf(&b, "%s would conflict: apply refuses (nothing written), or with %s keeps one side of %s, as the notes say.\n", plural(r.Conflicts, "path", "paths"), r.Hints.markers(r.SessionID), map[bool]string{true: "it", false: "each"}[r.Conflicts == 1])
	case r.DryRun && r.Conflicts > 0:
		fmt.Fprintf(&b, "%s would conflict: apply refuses (nothing written), or writes conflict markers with %s.\n", plural(r.Conflicts, "path", "paths"), r.Hints.markers(r.SessionID))
	case r.DryRun:
		b.WriteString("Nothing was written.\n")
	case r.Conflicts > 0 && r.Written == 0 && r.Mode != OnConflictMarkers:
		fmt.Fprintf(&b, "%s conflict: nothing was written. Resolve them in the session, or apply with %s.\n", plural(r.Conflicts, "path", "paths"), r.Hints.markers(r.SessionID))
	case r.Written == 0 && r.Conflicts > 0:
		b.WriteString("Nothing to write: the conflicting paths keep your version and the checkout has the rest of the session's changes.\n")
	case r.Written == 0:
		b.WriteString("Nothing to write: the checkout already has the session's changes.\n")
	default:
		fmt.Fprintf(&b, "Wrote %s as uncommitted changes (your HEAD, branches and index are unchanged).\n", plural(r.Written, "path", "paths"))
		if len(r.Markers) > 0 {
			fmt.Fprintf(&b, "%s conflict markers: resolve them.\n", plural(len(r.Markers), "path has", "paths have"))
		}
		fmt.Fprintf(&b, "Your files before the apply are kept at %s; take it back with: %s\n", r.UndoRef, strings.Trim(r.Hints.undo(r.SessionID), "`"))
	}
	return b.String()
}

// Text renders an undo.
func (u *UndoResult) Text() string {
	var b strings.Builder
	for _, n := range without(u.Notes, u.Repairs) {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	fmt.Fprintf(&b, "Undid the apply of session %s in %s: %s put back as %s.\n", u.SessionID, u.Target, plural(len(u.Paths), "path", "paths"), map[bool]string{true: "it was", false: "they were"}[len(u.Paths) == 1])
	if len(u.Overwrote) > 0 {
		fmt.Fprintf(&b, "Overwrote your later edits to %s; they are kept at %s (git restore --source=%s --worktree -- <path> brings one back, leaving your index alone).\n", strings.Join(displayPaths(u.Overwrote), ", "), u.SavedRef, u.SavedRef)
	}
	return b.String()
}

// Text renders a commit.
func (c *CommitResult) Text() string {
	if c.InPlace {
		return fmt.Sprintf("Committed %s on %s (%s): the paths the session's turns changed, as they are now; nothing else you staged or changed was committed.\n", plural(c.Files, "file", "files"), c.Branch, git.ShortOID(c.Commit))
	}
	moved := ""
	if c.MovedFrom != "" {
		moved = fmt.Sprintf("Note: the agent switched the session's worktree from its branch %s to %s, so the commit is on %s; %s does not have it.\n", c.MovedFrom, c.Branch, c.Branch, c.MovedFrom)
	}
	return fmt.Sprintf("Committed %s on %s (%s).\n%sBring it into your branch with: git merge %s\n", plural(c.Files, "file", "files"), c.Branch, git.ShortOID(c.Commit), moved, c.Branch)
}

// Summary is a one-line diffstat for status lines and `sessions show`.
func (d *DiffResult) Summary() string {
	if d.Stat.Files == 0 {
		return "no changes"
	}
	return fmt.Sprintf("%s, +%d −%d", plural(d.Stat.Files, "file", "files"), d.Stat.Insertions, d.Stat.Deletions)
}

// WaysHome names the three ways a session's work reaches the user's
// branch, for exit lines, /help and print mode.
func WaysHome(id string) string {
	return fmt.Sprintf("yolop diff %s (see it) · yolop apply %s (into your checkout) · yolop commit %s (on its branch)", id, id, id)
}

// displayPaths quotes the paths that are not plain printable text.
func displayPaths(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = git.DisplayPath(p)
	}
	return out
}

// without returns the notes that are not among the repairs.
func without(notes, repairs []string) []string {
	if len(repairs) == 0 {
		return notes
	}
	skip := map[string]bool{}
	for _, r := range repairs {
		skip[r] = true
	}
	var out []string
	for _, n := range notes {
		if !skip[n] {
			out = append(out, n)
		}
	}
	return out
}
