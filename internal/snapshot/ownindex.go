package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/yolop-dev/yolop/internal/git"
)

// resetOwnIndex sets the entries of the worktree's real index for the
// given paths to what the worktree's HEAD commit holds there (and drops
// those HEAD does not hold), so that after a restore `git status` in the
// worktree shows the restored files against HEAD and nothing staged by
// the turns the restore undid (a `git mv` rewound is no `RD` plus `??`).
//
// Only for Options.OwnIndex: a session-owned worktree, whose index is
// nobody's but the session's. It is plumbing only: ls-tree reads HEAD and
// `update-index --index-info` writes the entries, so no filter, hook or
// refresh runs; the entries written carry no stat data, and the next
// status compares those files once. Entries already equal to HEAD are
// left alone, so an index nothing was staged in is not rewritten.
func (e *Engine) resetOwnIndex(ctx context.Context, paths []string) error {
	if !e.ownIndex || len(paths) == 0 {
		return nil
	}
	r := e.repo.With("GIT_LITERAL_PATHSPECS=1", "GIT_OPTIONAL_LOCKS=0")
	// Path -> "mode oid" of files, symlinks and gitlinks, in HEAD and in
	// the index now (a path with an unmerged stage is never equal). Only
	// the entries that differ are written: an index the undone turns did
	// not stage in stays byte for byte as it is, stat data and all.
	head, cur := map[string]string{}, map[string]string{}
	// Both take their paths as arguments: a few hundred per run keeps
	// the argument list far below any system's limit.
	const chunk = 256
	for i := 0; i < len(paths); i += chunk {
		part := paths[i:min(i+chunk, len(paths))]
		out, err := r.Run(ctx, append([]string{"ls-tree", "-z", "--full-tree", "HEAD", "--"}, part...)...)
		if err != nil {
			return fmt.Errorf("read HEAD: %w", err)
		}
		for _, rec := range git.SplitZ(out) {
			meta, p, ok := strings.Cut(rec, "\t")
			f := strings.Fields(meta)
			if !ok || len(f) != 3 || f[1] == "tree" {
				continue
			}
			head[p] = f[0] + " " + f[2]
		}
		out, err = r.Run(ctx, append([]string{"ls-files", "-s", "-z", "--"}, part...)...)
		if err != nil {
			return fmt.Errorf("read the index: %w", err)
		}
		for _, rec := range git.SplitZ(out) {
			meta, p, ok := strings.Cut(rec, "\t")
			f := strings.Fields(meta)
			if !ok || len(f) != 3 {
				continue
			}
			if f[2] != "0" {
				cur[p] = "unmerged"
				continue
			}
			if cur[p] != "unmerged" {
				cur[p] = f[0] + " " + f[1]
			}
		}
	}
	zero := strings.Repeat("0", 40)
	if e.objFormat == "sha256" {
		zero = strings.Repeat("0", 64)
	}
	var in bytes.Buffer
	for _, p := range paths {
		want, inHead := head[p]
		if have, inIndex := cur[p]; inHead == inIndex && have == want {
			continue
		}
		if inHead {
			fmt.Fprintf(&in, "%s\t%s\x00", want, p)
		} else {
			fmt.Fprintf(&in, "0 %s\t%s\x00", zero, p)
		}
	}
	if in.Len() == 0 {
		return nil
	}
	if _, err := r.RunInput(ctx, in.Bytes(), "update-index", "-z", "--index-info"); err != nil {
		return fmt.Errorf("update the index: %w", err)
	}
	return nil
}
