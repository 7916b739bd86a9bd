package land

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/git"
)

// ApplyFrom makes the checkout holding dir the one s applies to when it
// is a checkout of the session's repository (whose common git dir is
// common) other than the session's worktree: an editor (ACP) applies to
// its project directory, the session's cwd, and a slash command run in
// another checkout of the same repository applies there. A directory of
// another repository does not count.
func (s *Session) ApplyFrom(ctx context.Context, dir, common string) {
	if dir == "" {
		return
	}
	if top, ok := checkoutOf(ctx, dir, common); ok && !fsutil.SameDir(top, s.Worktree) {
		s.Checkout = top
	}
}

// checkoutOf returns the top level of dir's checkout when it belongs to the
// repository whose common git dir is common.
func checkoutOf(ctx context.Context, dir, common string) (string, bool) {
	if common == "" {
		return "", false
	}
	out, err := git.New(dir).Run(ctx, "rev-parse", "--show-toplevel", "--git-common-dir")
	if err != nil {
		return "", false
	}
	f := strings.Split(git.Trim(out), "\n")
	if len(f) != 2 || f[0] == "" {
		return "", false
	}
	c := f[1]
	if !filepath.IsAbs(c) {
		c = filepath.Join(dir, c)
	}
	return f[0], fsutil.SameDir(c, common)
}
