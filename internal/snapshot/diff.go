package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/yolop-dev/yolop/internal/git"
)

// ChangeKind names what a restore does to one path.
type ChangeKind string

// Change kinds, as shown in previews.
const (
	Added       ChangeKind = "added"
	Modified    ChangeKind = "modified"
	Deleted     ChangeKind = "deleted"
	TypeChanged ChangeKind = "type_changed"
	ModeChanged ChangeKind = "mode_changed"
)

// Change is one path that differs between two trees. Modes are git's octal
// strings ("100644", "100755", "120000"); OIDs are empty on the missing side.
type Change struct {
	Path    string
	Kind    ChangeKind
	OldMode string
	NewMode string
	OldOID  string
	NewOID  string
}

// Diff returns what applying toTree over fromTree changes, sorted by path.
func (e *Engine) Diff(ctx context.Context, fromTree, toTree string) ([]Change, error) {
	if err := e.guardLink(); err != nil {
		return nil, err
	}
	return e.diff(ctx, fromTree, toTree)
}

func (e *Engine) diff(ctx context.Context, fromTree, toTree string) ([]Change, error) {
	e.editMu.Lock()
	l := e.lastEdit
	e.editMu.Unlock()
	if l.from == fromTree && l.to == toTree && fromTree != "" && !e.noEditDiff {
		// The tree edit that made toTree from fromTree knows.
		return slices.Clone(l.changes), nil
	}
	// diff-tree needlessly loads the index; pointing GIT_INDEX_FILE at a
	// file that does not exist skips that (5x faster at 100k files).
	r := e.repo.With("GIT_INDEX_FILE=" + filepath.Join(e.stateDir, "no-index"))
	out, err := r.Run(ctx, "diff-tree", "-r", "-z", "--raw", "--no-renames", "--full-index", "--no-commit-id", fromTree, toTree)
	if err != nil {
		err = fmt.Errorf("snapshot: diff %s..%s: %w", fromTree, toTree, err)
		for _, t := range []string{fromTree, toTree} {
			if e.missing(ctx, t) {
				return nil, &MissingObjectError{OID: t, Err: err}
			}
		}
		return nil, err
	}
	ch, err := parseRawDiff(out)
	if err != nil {
		return nil, fmt.Errorf("snapshot: diff %s..%s: %w", fromTree, toTree, err)
	}
	return ch, nil
}

// parseRawDiff parses `diff-tree -r -z --raw` output:
// ":<old mode> <new mode> <old oid> <new oid> <status>\0<path>\0".
func parseRawDiff(out []byte) ([]Change, error) {
	fields := git.SplitZ(out)
	var ch []Change
	for i := 0; i < len(fields); i++ {
		meta := fields[i]
		if !strings.HasPrefix(meta, ":") || i+1 >= len(fields) {
			return nil, fmt.Errorf("unexpected diff-tree output %q", meta)
		}
		i++
		f := strings.Fields(meta[1:])
		if len(f) != 5 {
			return nil, fmt.Errorf("unexpected diff-tree output %q", meta)
		}
		c := Change{Path: fields[i], OldMode: f[0], NewMode: f[1], OldOID: f[2], NewOID: f[3]}
		switch f[4][0] {
		case 'A':
			c.Kind, c.OldMode, c.OldOID = Added, "", ""
		case 'D':
			c.Kind, c.NewMode, c.NewOID = Deleted, "", ""
		case 'T':
			c.Kind = TypeChanged
		case 'M':
			c.Kind = Modified
			if c.OldOID == c.NewOID && c.OldMode != c.NewMode {
				c.Kind = ModeChanged
			}
		default:
			return nil, fmt.Errorf("unexpected diff-tree status %q for %q", f[4], c.Path)
		}
		ch = append(ch, c)
	}
	sort.Slice(ch, func(a, b int) bool { return ch[a].Path < ch[b].Path })
	return ch, nil
}

// PathPatch is the difference of one path between two trees.
type PathPatch struct {
	Path string
	// Patch is git's patch for the path, byte for byte (binary content as
	// a "GIT binary patch"); empty when the path is the same in both trees.
	Patch []byte
	// Binary is set when git treats either side as binary, so the patch
	// holds no readable lines.
	Binary bool
	// OldSize and NewSize are the blob sizes in bytes (-1 where the path
	// does not exist or is not a file).
	OldSize, NewSize int64
	// TooLarge is set, with an empty patch, for text larger than
	// PatchLimit on either side.
	TooLarge bool
}

// PatchPath returns the patch that turns path in fromTree into path in
// toTree. Content is compared exactly as stored: no text conversion,
// external diff driver or rename detection applies. A side larger than
// PatchLimit is not diffed at all (git would read both blobs and, for
// binary content, compute a delta of them): the result says Binary, from
// the first bytes of the blobs as git decides it, or TooLarge.
func (e *Engine) PatchPath(ctx context.Context, fromTree, toTree, path string) (PathPatch, error) {
	if path == "" {
		return PathPatch{}, fmt.Errorf("snapshot: patch %s..%s: no path given", fromTree, toTree)
	}
	p := PathPatch{Path: path, OldSize: -1, NewSize: -1}
	var sides [2]treeEntry
	for i, tree := range []string{fromTree, toTree} {
		ent, err := e.entry(ctx, tree, path)
		if err != nil {
			return PathPatch{}, fmt.Errorf("snapshot: patch %s..%s -- %s: %w", fromTree, toTree, path, err)
		}
		sides[i] = ent
	}
	p.OldSize, p.NewSize = sides[0].size, sides[1].size
	if sides[0] == sides[1] {
		return p, nil // the same in both: an empty patch
	}
	if p.OldSize > PatchLimit || p.NewSize > PatchLimit {
		for _, side := range sides {
			if side.size < 0 {
				continue
			}
			head, err := e.blobHead(ctx, side.oid, binaryProbe)
			if err != nil {
				return PathPatch{}, fmt.Errorf("snapshot: patch %s..%s -- %s: %w", fromTree, toTree, path, err)
			}
			if bytes.IndexByte(head, 0) >= 0 {
				p.Binary = true
			}
		}
		p.TooLarge = !p.Binary
		return p, nil
	}
	r := e.repo.With("GIT_INDEX_FILE="+filepath.Join(e.stateDir, "no-index"), "GIT_LITERAL_PATHSPECS=1")
	out, err := r.Run(ctx, "diff-tree", "-p", "--binary", "--no-renames", "--full-index", "--no-commit-id",
		"--no-ext-diff", "--no-textconv", "--no-color", "--src-prefix=a/", "--dst-prefix=b/",
		fromTree, toTree, "--", path)
	if err != nil {
		return PathPatch{}, fmt.Errorf("snapshot: patch %s..%s -- %s: %w", fromTree, toTree, path, err)
	}
	p.Patch = out
	p.Binary = bytes.Contains(out, []byte("\nGIT binary patch\n")) || bytes.Contains(out, []byte("\nBinary files "))
	return p, nil
}

// PatchLimit is the blob size in bytes above which PatchPath does not
// diff a path: no one reads such a diff in a preview, and computing it
// costs seconds.
const PatchLimit = 1 << 20

// binaryProbe is how much of a blob git looks at to call it binary (a NUL
// byte in the first 8000 bytes).
const binaryProbe = 8000

// treeEntry is what a tree holds at a path: size -1 when it holds no
// blob there (nothing, a directory or a submodule).
type treeEntry struct {
	mode, oid string
	size      int64
}

// entry reads the tree's entry at path.
func (e *Engine) entry(ctx context.Context, tree, path string) (treeEntry, error) {
	none := treeEntry{size: -1}
	out, err := e.repo.With("GIT_LITERAL_PATHSPECS=1").Run(ctx, "ls-tree", "-z", "--long", "--full-tree", tree, "--", path)
	if err != nil {
		return none, err
	}
	for _, rec := range git.SplitZ(out) {
		meta, name, ok := strings.Cut(rec, "\t")
		if !ok || name != path {
			continue
		}
		f := strings.Fields(meta)
		if len(f) != 4 {
			return none, fmt.Errorf("unexpected ls-tree output %q", rec)
		}
		if f[1] != "blob" {
			return treeEntry{mode: f[0], oid: f[2], size: -1}, nil
		}
		n, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return none, fmt.Errorf("unexpected ls-tree output %q", rec)
		}
		return treeEntry{mode: f[0], oid: f[2], size: n}, nil
	}
	return none, nil
}

// blobHead reads at most n bytes from the start of blob oid, without
// reading the rest.
func (e *Engine) blobHead(ctx context.Context, oid string, n int) ([]byte, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	args := []string{"cat-file", "blob", oid}
	cmd, stderr := e.repo.Command(ctx, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, e.repo.WrapError(args, err, stderr)
	}
	buf := make([]byte, n)
	got, rerr := io.ReadFull(out, buf)
	if rerr == io.ErrUnexpectedEOF || rerr == io.EOF {
		rerr = nil // a blob shorter than n
	}
	if rerr != nil || got < n {
		// Read to the end (a short blob), then wait for git's verdict.
		if werr := cmd.Wait(); werr != nil {
			return nil, e.repo.WrapError(args, werr, stderr)
		}
		return buf[:got], rerr
	}
	// Enough: the rest of the blob is not wanted.
	cancel()
	_ = cmd.Wait() // killed on purpose; its exit status says nothing
	return buf[:got], nil
}

// Differ compares snapshot trees of a worktree's repository without
// opening an Engine: it only reads git objects and writes nothing, so it
// works where the session's state directory cannot be written (a session
// listed from a read-only data directory, or while another process holds
// it).
type Differ struct {
	repo *git.Runner
}

// NewDiffer returns a Differ for the repository of worktree. stateDir is
// the session's snapshot state directory (Options.StateDir); it is not
// written, nor does it need to exist.
func NewDiffer(worktree, stateDir string) *Differ {
	// As in Engine.diff: an index file that does not exist keeps diff-tree
	// from loading the worktree's real index, which it does not need. Git
	// tolerates a missing file, not a path through a non-directory.
	return &Differ{repo: git.New(worktree).With("GIT_INDEX_FILE=" + filepath.Join(stateDir, "no-index"))}
}

// Diff lists the changes from fromTree to toTree, like Engine.Diff.
func (d *Differ) Diff(ctx context.Context, fromTree, toTree string) ([]Change, error) {
	out, err := d.repo.Run(ctx, "diff-tree", "-r", "-z", "--raw", "--no-renames", "--full-index", "--no-commit-id", fromTree, toTree)
	if err != nil {
		return nil, fmt.Errorf("snapshot: diff %s..%s: %w", fromTree, toTree, err)
	}
	ch, err := parseRawDiff(out)
	if err != nil {
		return nil, fmt.Errorf("snapshot: diff %s..%s: %w", fromTree, toTree, err)
	}
	return ch, nil
}

// missing reports whether oid is an object id the repository does not
// hold (pruned, e.g. by git gc after its ref was deleted): `git cat-file
// -e` exits 1, quietly, for a well-formed id that names no object. A
// failure that says anything else is not taken for a missing object.
func (e *Engine) missing(ctx context.Context, oid string) bool {
	if !git.IsOID(oid) {
		return false
	}
	_, err := e.repo.Run(ctx, "cat-file", "-e", oid)
	var ge *git.Error
	return errors.As(err, &ge) && ge.ExitCode == 1 && ctx.Err() == nil
}
