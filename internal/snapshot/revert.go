package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/yolop-dev/yolop/internal/git"
)

// Step is one change to take back in place: every path that differs
// between From and To was changed from From to To (by an agent turn, from
// its start capture to its end capture, or by a restore, from its recovery
// capture to what it wrote). Taking it back moves each such path from To
// back to From where the current file allows it; no other path is looked
// at.
type Step struct {
	From, To string // trees
	// Label names the step in conflict markers ("cp3").
	Label string
}

// Outcome is what taking steps back does to one path.
type Outcome string

// Outcomes, as previews and results show them.
const (
	// Restored: the file still held what the steps left, so it gets the
	// bytes it had before them, exactly.
	Restored Outcome = "restored"
	// Merged: the file was changed since by someone else; the steps' part
	// is taken out and the other changes are kept. When an older step's
	// change cannot be told apart from the other changes, the newer steps
	// are still taken out and that step's change stays (Why says so).
	Merged Outcome = "merged"
	// Kept: the other changes overlap the steps' own before any step could
	// be taken out, or the file is binary, a symlink, or was deleted or
	// created on both sides: it stays as it is.
	Kept Outcome = "kept"
	// Conflict: as Kept, but the file gets labelled conflict markers
	// (RevertOptions.Markers).
	Conflict Outcome = "conflict"
	// Overwritten: the path had other changes, and it gets the bytes it
	// had before the steps anyway (RevertOptions.Overwrite).
	Overwritten Outcome = "overwritten"
)

// RevertOptions choose what happens to a path whose other changes cannot
// be kept apart from the steps'.
type RevertOptions struct {
	// Markers writes conflict markers where the changes overlap (text
	// files only: binary files and symlinks are still kept).
	Markers bool
	// Overwrite gives every path the steps changed its bytes from before
	// the oldest step, whatever changed it since.
	Overwrite bool
}

// PathOutcome is the result for one path the steps changed.
type PathOutcome struct {
	Path    string
	Outcome Outcome
	// Why says why a path was kept (or overwritten): "changed since",
	// "binary", "symlink", "deleted since", "created since".
	Why string
	// Changed says the result differs from the current file.
	Changed bool
	// Kind is the change the steps alone would make to the current file
	// (for a kept path: what was not done).
	Kind ChangeKind
}

// entry is a path's state in a tree: absent (mode "") or a blob.
type entry struct {
	mode, oid string
}

func (x entry) absent() bool { return x.mode == "" }

// Revert computes the tree that taking steps back (in the order given,
// newest first) over current makes, and what happens to each path. Nothing
// on disk changes; merged blobs are written to the object store. The
// result is meant for Restore(current, tree), which then touches only the
// paths whose outcome changed them.
func (e *Engine) Revert(ctx context.Context, current string, steps []Step, o RevertOptions) (string, []PathOutcome, error) {
	if err := e.guardLink(); err != nil {
		return "", nil, err
	}
	type pathStep struct {
		base, theirs entry // what the step left; what it was before
		label        string
	}
	byPath := map[string][]pathStep{}
	for _, s := range steps {
		if s.From == s.To {
			continue
		}
		ch, err := e.diff(ctx, s.From, s.To)
		if err != nil {
			return "", nil, err
		}
		for _, c := range ch {
			byPath[c.Path] = append(byPath[c.Path], pathStep{
				base:   entry{mode: normMode(c.NewMode), oid: nonZero(c.NewOID)},
				theirs: entry{mode: normMode(c.OldMode), oid: nonZero(c.OldOID)},
				label:  s.Label,
			})
		}
	}
	if len(byPath) == 0 {
		return current, nil, nil
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	cur, err := e.entries(ctx, current, paths)
	if err != nil {
		return "", nil, err
	}
	var outcomes []PathOutcome
	final := map[string]entry{}
	for _, p := range paths {
		now := cur[p]
		state := now
		out := Restored
		why := ""
	steps:
		for _, st := range byPath[p] {
			switch {
			case state == st.base:
				state = st.theirs
			case state == st.theirs:
				// Already as it was before the step (taken back by hand).
			default:
				next, how, reason, err := e.merge3(ctx, p, st.base, state, st.theirs, st.label, o.Markers)
				if err != nil {
					return "", nil, err
				}
				switch how {
				case Merged:
					state = next
					if out == Restored {
						out = Merged
					}
				case Conflict:
					state, out, why = next, Conflict, reason
					break steps
				default:
					// This step's change cannot be told apart from what
					// changed the file since: it stays, and so does the
					// file as the newer steps' undoing left it (what the
					// other side had there before them).
					out, why = Kept, reason
					if state != now {
						why = fmt.Sprintf("%s; %s's change stays", reason, st.label)
					}
					break steps
				}
			}
		}
		if o.Overwrite && out != Restored {
			steps := byPath[p]
			state, out = steps[len(steps)-1].theirs, Overwritten
		}
		if out == Kept && state != now {
			// The newer steps were taken back: the file changes, so it is
			// not kept as it is.
			out = Merged
		}
		final[p] = state
		steps := byPath[p]
		outcomes = append(outcomes, PathOutcome{Path: p, Outcome: out, Why: why, Changed: state != now, Kind: wouldChange(now, steps[len(steps)-1].theirs)})
	}
	tree, err := e.editTree(ctx, current, cur, final)
	if err != nil {
		return "", nil, err
	}
	return tree, outcomes, nil
}

// wouldChange names the change from a to b.
func wouldChange(a, b entry) ChangeKind {
	switch {
	case a.absent():
		return Added
	case b.absent():
		return Deleted
	case (a.mode == "120000") != (b.mode == "120000"):
		return TypeChanged
	case a.oid == b.oid && a.mode != b.mode:
		return ModeChanged
	}
	return Modified
}

func normMode(m string) string {
	if m == "" || strings.Trim(m, "0") == "" {
		return ""
	}
	return m
}

func nonZero(oid string) string {
	if strings.Trim(oid, "0") == "" {
		return ""
	}
	return oid
}

// entries reads the given paths' entries of tree (absent paths are left
// out of the map).
func (e *Engine) entries(ctx context.Context, tree string, paths []string) (map[string]entry, error) {
	out := make(map[string]entry, len(paths))
	r := e.repo.With("GIT_LITERAL_PATHSPECS=1", "GIT_INDEX_FILE="+filepath.Join(e.stateDir, "no-index"))
	const chunk = 512
	for i := 0; i < len(paths); i += chunk {
		part := paths[i:min(i+chunk, len(paths))]
		args := append([]string{"ls-tree", "-r", "-z", "--full-tree", "--full-name", tree, "--"}, part...)
		b, err := r.Run(ctx, args...)
		if err != nil {
			return nil, fmt.Errorf("snapshot: list %s: %w", tree, err)
		}
		for _, rec := range git.SplitZ(b) {
			meta, name, ok := strings.Cut(rec, "\t")
			f := strings.Fields(meta)
			if !ok || len(f) != 3 {
				return nil, fmt.Errorf("snapshot: list %s: unexpected line %q", tree, rec)
			}
			out[name] = entry{mode: f[0], oid: f[2]}
		}
	}
	return out, nil
}

// merge3 merges one path whose current state is neither what a step left
// nor what it was before: the step's change (base → theirs) is applied to
// ours. It returns Merged with the new entry, Conflict with the marked
// one, or Kept with the reason.
func (e *Engine) merge3(ctx context.Context, path string, base, ours, theirs entry, label string, markers bool) (entry, Outcome, string, error) {
	switch {
	case ours.absent():
		return ours, Kept, "deleted since", nil
	case base.absent() || theirs.absent():
		// The step created (or deleted) the file and it was changed since.
		return ours, Kept, "changed since", nil
	case ours.mode == "120000" || base.mode == "120000" || theirs.mode == "120000":
		return ours, Kept, "symlink", nil
	case ours.mode == "160000" || base.mode == "160000" || theirs.mode == "160000":
		return ours, Kept, "submodule", nil
	}
	mode := ours.mode
	switch {
	case ours.mode == base.mode:
		mode = theirs.mode
	case theirs.mode == base.mode:
	default:
		return ours, Kept, "mode changed since", nil
	}
	switch {
	case ours.oid == base.oid:
		return entry{mode: mode, oid: theirs.oid}, Merged, "", nil
	case theirs.oid == base.oid:
		return entry{mode: mode, oid: ours.oid}, Merged, "", nil
	}
	blobs, err := e.readBlobs(ctx, base.oid, ours.oid, theirs.oid)
	if err != nil {
		return ours, "", "", err
	}
	for _, b := range blobs {
		if isBinary(b) {
			return ours, Kept, "binary", nil
		}
	}
	dir, err := os.MkdirTemp(e.stateDir, "merge-")
	if err != nil {
		return ours, "", "", err
	}
	defer os.RemoveAll(dir)
	names := []string{"base", "ours", "theirs"}
	files := make([]string, 3)
	for i, b := range blobs {
		files[i] = filepath.Join(dir, names[i])
		if err := os.WriteFile(files[i], b, 0o600); err != nil {
			return ours, "", "", err
		}
	}
	if label == "" {
		label = "checkpoint"
	}
	// merge-file writes the result over its first file and exits with
	// the number of conflicts.
	args := []string{"merge-file",
		"-L", "yours (" + path + " now)", "-L", "as " + label + " left it", "-L", "before " + label,
		files[1], files[0], files[2]}
	_, err = e.priv.Run(ctx, args...)
	var gerr *git.Error
	conflicts := 0
	if errors.As(err, &gerr) && gerr.ExitCode > 0 && gerr.ExitCode < 128 {
		conflicts, err = gerr.ExitCode, nil
	}
	if err != nil {
		return ours, "", "", fmt.Errorf("snapshot: merge %s: %w", git.DisplayPath(path), err)
	}
	res, err := os.ReadFile(files[1])
	if err != nil {
		return ours, "", "", err
	}
	if conflicts > 0 && !markers {
		return ours, Kept, "changed since", nil
	}
	oid, err := e.writeBlob(ctx, res)
	if err != nil {
		return ours, "", "", err
	}
	if conflicts > 0 {
		return entry{mode: mode, oid: oid}, Conflict, "changed since", nil
	}
	return entry{mode: mode, oid: oid}, Merged, "", nil
}

// isBinary tells a binary file the way git does: a NUL byte in its first
// 8000 bytes.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0
}

func (e *Engine) readBlobs(ctx context.Context, oids ...string) ([][]byte, error) {
	br, err := e.openBlobs(ctx, oids)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(oids))
	for _, o := range oids {
		b, err := br.next(o)
		if err != nil {
			return nil, errors.Join(err, br.close())
		}
		out = append(out, b)
	}
	return out, br.close()
}

func (e *Engine) writeBlob(ctx context.Context, content []byte) (string, error) {
	// The private runner pins attributes off: the blob holds these bytes.
	out, err := e.runPriv(ctx, content, "hash-object", "-w", "--stdin", "--no-filters")
	if err != nil {
		return "", fmt.Errorf("snapshot: write merged file: %w", err)
	}
	return git.Trim(out), nil
}

// editTree returns current with the paths of final set to their entries
// (absent ones removed), through a scratch index.
func (e *Engine) editTree(ctx context.Context, current string, cur, final map[string]entry) (string, error) {
	var info bytes.Buffer
	for p, x := range final {
		if x == cur[p] {
			continue
		}
		if x.absent() {
			fmt.Fprintf(&info, "0 %s\t%s", strings.Repeat("0", len(cur[p].oid)), p)
		} else {
			fmt.Fprintf(&info, "%s %s\t%s", x.mode, x.oid, p)
		}
		info.WriteByte(0)
	}
	if info.Len() == 0 {
		return current, nil
	}
	index := filepath.Join(e.stateDir, "revert-index")
	defer os.Remove(index)
	r := e.repo.With("GIT_INDEX_FILE=" + index)
	if _, err := r.Run(ctx, "read-tree", current); err != nil {
		return "", fmt.Errorf("snapshot: revert: %w", err)
	}
	if _, err := r.RunInput(ctx, info.Bytes(), "update-index", "-z", "--index-info"); err != nil {
		return "", fmt.Errorf("snapshot: revert: %w", err)
	}
	out, err := r.Run(ctx, "write-tree")
	if err != nil {
		return "", fmt.Errorf("snapshot: revert: %w", err)
	}
	return git.Trim(out), nil
}
