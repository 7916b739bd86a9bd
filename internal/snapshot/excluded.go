package snapshot

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/yolop-dev/yolop/internal/git"
)

// MaxExcluded bounds the list Excluded returns.
const MaxExcluded = 50

// Excluded lists what a restore leaves alone in the worktree as it is now:
// ignored files, the write-blocklisted directories, nested repositories and
// submodules, a directory listed once as "dir/". Previews show it so the user knows what a
// restore does not bring back. At most MaxExcluded entries are returned; a
// final entry "… and N more" counts the rest. It takes no locks on the
// private index and writes nothing.
func (e *Engine) Excluded(ctx context.Context) ([]string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.waitIndexUpdate()
	if err := e.guardLink(); err != nil {
		return nil, err
	}
	out, err := e.priv.RunInput(ctx, nil, append([]string{"--no-optional-locks"}, append(e.privConfig(),
		"status", "--porcelain=v1", "-z", "--ignored=matching", "--untracked-files=all", "--ignore-submodules=all", "--no-renames")...)...)
	if err != nil {
		return nil, fmt.Errorf("snapshot: list excluded paths: %w", err)
	}
	var list []string
	for _, rec := range git.SplitZ(out) {
		if len(rec) < 4 || !strings.HasPrefix(rec, "!! ") {
			continue
		}
		p := rec[3:]
		if strings.HasPrefix(p, tmpPrefix) || strings.Contains(p, "/"+tmpPrefix) {
			continue
		}
		list = append(list, p)
	}
	// Nested repositories and submodules are left alone too, whatever an
	// earlier snapshot held at their place.
	seen := map[string]bool{}
	for _, p := range list {
		seen[p] = true
	}
	for _, d := range walkTree(e.root, nil, false).nested {
		if !seen[d+"/"] {
			list = append(list, d+"/")
		}
	}
	sort.Strings(list)
	if n := len(list); n > MaxExcluded {
		list = append(list[:MaxExcluded-1], fmt.Sprintf("… and %d more", n-MaxExcluded+1))
	}
	if list == nil {
		list = []string{}
	}
	return list, nil
}
