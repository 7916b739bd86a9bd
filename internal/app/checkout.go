package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// checkoutCheck looks, while a new session starts, for uncommitted changes
// in the user's checkout: the session's worktree starts from the commit
// HEAD names, so the agent does not see them. The status runs beside the
// worktree's creation; the warning is sent before the first turn runs.
type checkoutCheck struct {
	done chan struct{}
	warn string
	// submodules says which submodules the worktree does not check out.
	submodules string
}

// startCheckoutCheck starts the check of the checkout at root, whose HEAD
// commit is head.
func startCheckoutCheck(ctx context.Context, root, head string) *checkoutCheck {
	c := &checkoutCheck{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.warn = checkoutWarning(ctx, root, head)
		c.submodules = submoduleWarning(ctx, root, head)
	}()
	return c
}

// result waits for the check and returns its warning ("" when the
// checkout is clean).
func (c *checkoutCheck) result() string {
	if c == nil {
		return ""
	}
	<-c.done
	return c.warn
}

// submoduleNote waits for the check and says which submodules the
// session's worktree does not check out ("" for none).
func (c *checkoutCheck) submoduleNote() string {
	if c == nil {
		return ""
	}
	<-c.done
	return c.submodules
}

// submoduleWarning says which submodules the commit head has: a session
// worktree does not check them out.
func submoduleWarning(ctx context.Context, root, head string) string {
	out, err := git.New(root).Run(context.WithoutCancel(ctx), "config", "--blob", head+":.gitmodules", "-z", "--get-regexp", `^submodule\..*\.path$`)
	if err != nil {
		return "" // no .gitmodules (or no submodule in it)
	}
	var paths []string
	for _, kv := range git.SplitZ(out) {
		if _, v, ok := strings.Cut(kv, "\n"); ok && v != "" {
			paths = append(paths, git.DisplayPath(v))
		}
	}
	return submoduleText(paths)
}

// submoduleText tells the user that the listed submodules are not checked
// out in the session's worktree ("" for none).
func submoduleText(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	what, its, it := "submodule "+paths[0]+" is", "its", "it"
	if len(paths) > 1 {
		its, it = "their", "them"
		list := paths
		if len(list) > 5 {
			list = append(append([]string(nil), list[:5]...), fmt.Sprintf("… and %d more", len(paths)-5))
		}
		what = "submodules " + strings.Join(list, ", ") + " are"
	}
	return what + " not checked out in the session's worktree (an empty directory there): the agent cannot see " + its + " files, and what it writes inside " + it + " is left out of `yolop diff`, `apply` and `commit`"
}

func checkoutWarning(ctx context.Context, root, head string) string {
	out, err := git.New(root).Run(context.WithoutCancel(ctx), "status", "--porcelain", "-z", "--untracked-files=normal", "--ignore-submodules=dirty")
	if err != nil {
		return fmt.Sprintf("your checkout %s could not be checked for uncommitted changes (%v); the session's worktree starts from your last commit %s and has none of them", root, err, short(head))
	}
	var paths []string
	var instr []string // what the agent will not read as the user has it
	entries := git.SplitZ(out)
	for i := 0; i < len(entries); i++ {
		e := entries[i]
		if len(e) < 4 {
			continue
		}
		paths = append(paths, e[3:])
		if n := instructionsNote(e[:2], e[3:]); n != "" {
			instr = append(instr, n)
		}
		if e[0] == 'R' || e[0] == 'C' {
			i++ // the rename's source follows
		}
	}
	if len(paths) == 0 {
		return ""
	}
	lead := ""
	if len(instr) > 0 {
		// Named first: project instructions silently missing change
		// everything the agent does.
		it := "it"
		if len(instr) > 1 {
			it = "them"
		}
		lead = strings.Join(instr, "; ") + ". Commit " + it + " and start a new session, or run yolop with --worktree off to work in your checkout itself. "
	}
	list := paths
	more := ""
	if len(list) > 3 {
		list, more = list[:3], fmt.Sprintf(" and %d more", len(paths)-3)
	}
	for i, p := range list {
		list[i] = git.DisplayPath(p)
	}
	rest := fmt.Sprintf("your checkout %s has %s (%s%s) that this session does not see: its worktree starts from your last commit %s. Commit or stash them and start a new session if the agent needs them; `yolop apply` merges the session's work with them later",
		root, checkpoint.Plural(len(paths), "uncommitted change", "uncommitted changes"), strings.Join(list, ", "), more, short(head))
	if lead != "" {
		// A new sentence after the instructions' one.
		rest = "Y" + rest[1:]
	}
	return lead + rest
}

// instructionsNote says what the agent reads of a project instructions
// file (AGENTS.md) that has uncommitted changes in the user's checkout:
// the session's worktree holds only what is committed. "" for any other
// path. xy is the path's status (porcelain v1).
func instructionsNote(xy, path string) string {
	if base := path[strings.LastIndexByte(path, '/')+1:]; base != agent.InstructionsFile {
		return ""
	}
	p := git.DisplayPath(path)
	switch {
	case xy == "??":
		return p + " in your checkout is untracked, so this session's worktree does not have it and the agent does not read it"
	case strings.ContainsRune(xy, 'A'):
		return p + " in your checkout is not committed (only added), so this session's worktree does not have it and the agent does not read it"
	case strings.ContainsRune(xy, 'D'):
		return p + " is deleted in your checkout but not in your last commit, so the agent still reads the committed one"
	}
	return p + " has uncommitted changes in your checkout, so the agent reads the committed version, not yours"
}

func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}

// startDraftCheck looks at dir's checkout for a session that is still a
// draft (a host that waits for the first prompt: the TUI), so that the
// warning can be shown before the user types. It returns nil outside a
// repository with commits.
func startDraftCheck(dir string) *checkoutCheck {
	c := &checkoutCheck{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		ctx := context.Background()
		repo, err := worktree.Detect(ctx, dir)
		if err != nil {
			return
		}
		c.warn = checkoutWarning(ctx, repo.Root, repo.Head)
		c.submodules = submoduleWarning(ctx, repo.Root, repo.Head)
	}()
	return c
}

// StartNotices waits (until ctx ends) for what a new session's host should
// show before the first prompt: the checkout's uncommitted changes the
// session's worktree will not have, and the submodules it does not check
// out. It returns nothing for a session
// that exists already, and each notice once; the first turn does not
// repeat a warning given here unless it changed.
func (s *Session) StartNotices(ctx context.Context) []string {
	s.mu.Lock()
	c := s.draftCheck
	s.draftCheck = nil
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		return nil
	}
	var out []string
	for _, w := range []string{c.warn, c.submodules} {
		if w != "" {
			out = append(out, w)
		}
	}
	s.mu.Lock()
	s.toldEarly, s.toldSubs = c.warn, c.submodules
	s.mu.Unlock()
	return out
}
