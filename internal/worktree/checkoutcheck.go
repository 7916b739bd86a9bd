package worktree

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/yolop-dev/yolop/internal/git"
)

// CheckoutCheck looks, while a new session starts, for what the user's
// checkout has that the session's worktree will not: uncommitted changes
// (the worktree starts from the commit HEAD names, so the agent does not
// see them) and submodules (a worktree does not check them out). It runs
// beside the worktree's creation; what it finds is told before the first
// turn runs. A nil check finds nothing.
type CheckoutCheck struct {
	done chan struct{}
	// instructions is the name of the project instructions file, whose
	// uncommitted changes are named first.
	instructions string
	changes      string
	// submodules says which submodules the worktree does not check out.
	submodules string
}

// CheckCheckout starts the check of the checkout at root, whose HEAD
// commit is head; instructions names the project instructions file
// (AGENTS.md).
func CheckCheckout(ctx context.Context, root, head, instructions string) *CheckoutCheck {
	c := &CheckoutCheck{done: make(chan struct{}), instructions: instructions}
	go func() {
		defer close(c.done)
		c.changes = c.checkoutWarning(ctx, root, head)
		c.submodules = submoduleWarning(ctx, root, head)
	}()
	return c
}

// CheckCheckoutOf is CheckCheckout for the checkout holding dir, for a
// session that is still a draft (a host that waits for the first prompt:
// the TUI), so that what it finds can be shown before the user types.
// Outside a repository with commits it finds nothing.
func CheckCheckoutOf(dir, instructions string) *CheckoutCheck {
	c := &CheckoutCheck{done: make(chan struct{}), instructions: instructions}
	go func() {
		defer close(c.done)
		ctx := context.Background()
		repo, err := Detect(ctx, dir)
		if err != nil {
			return
		}
		c.changes = c.checkoutWarning(ctx, repo.Root, repo.Head)
		c.submodules = submoduleWarning(ctx, repo.Root, repo.Head)
	}()
	return c
}

// Done is closed when the check has ended.
func (c *CheckoutCheck) Done() <-chan struct{} { return c.done }

// StartNotices are what a new session's user is told of where it works
// before its first turn runs: what its worktree does not have of their
// checkout (uncommitted changes, submodules) and what starting it found.
// A host that waits for the first prompt shows the draft's check early
// (Early); the first turn then tells what is new (First).
type StartNotices struct {
	mu    sync.Mutex // guards the fields below
	draft *CheckoutCheck
	// shown is what Early said: the changes and the submodules.
	shown   [2]string
	check   *CheckoutCheck
	notices []string
}

// Draft sets the check Early waits for: CheckCheckoutOf the directory a
// session that is still a draft was opened in.
func (n *StartNotices) Draft(c *CheckoutCheck) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.draft = c
}

// Started sets the check made as the session's worktree was started and
// what starting it found (Chosen.Check and Chosen.Notices).
func (n *StartNotices) Started(c *CheckoutCheck, notices []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.check, n.notices = c, notices
}

// Early waits (until ctx ends) for the draft's check and returns what it
// found, once.
func (n *StartNotices) Early(ctx context.Context) []string {
	n.mu.Lock()
	c := n.draft
	n.draft = nil
	n.mu.Unlock()
	if c == nil {
		return nil
	}
	select {
	case <-c.Done():
	case <-ctx.Done():
		return nil
	}
	changes, subs := c.Changes(), c.Submodules()
	n.mu.Lock()
	n.shown = [2]string{changes, subs}
	n.mu.Unlock()
	var out []string
	for _, w := range []string{changes, subs} {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// First returns, once, what the first turn tells before it runs: what
// starting the worktree found, then what the start's check found unless
// Early said it already.
func (n *StartNotices) First() []string {
	n.mu.Lock()
	c, told, shown := n.check, n.notices, n.shown
	n.check, n.notices = nil, nil
	n.mu.Unlock()
	if w := c.Changes(); w != "" && w != shown[0] {
		told = append(told, w)
	}
	if w := c.Submodules(); w != "" && w != shown[1] {
		told = append(told, w)
	}
	return told
}

// Changes waits for the check and says which uncommitted changes of the
// checkout the session's worktree does not have ("" when it is clean).
func (c *CheckoutCheck) Changes() string {
	if c == nil {
		return ""
	}
	<-c.done
	return c.changes
}

// Submodules waits for the check and says which submodules the session's
// worktree does not check out ("" for none).
func (c *CheckoutCheck) Submodules() string {
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

func (c *CheckoutCheck) checkoutWarning(ctx context.Context, root, head string) string {
	out, err := git.New(root).Run(context.WithoutCancel(ctx), "status", "--porcelain", "-z", "--untracked-files=normal", "--ignore-submodules=dirty")
	if err != nil {
		return fmt.Sprintf("your checkout %s could not be checked for uncommitted changes (%v); the session's worktree starts from your last commit %s and has none of them", root, err, git.ShortOID(head))
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
		if n := instructionsNote(c.instructions, e[:2], e[3:]); n != "" {
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
	changes := fmt.Sprintf("%d uncommitted changes", len(paths))
	if len(paths) == 1 {
		changes = "1 uncommitted change"
	}
	rest := fmt.Sprintf("your checkout %s has %s (%s%s) that this session does not see: its worktree starts from your last commit %s. Commit or stash them and start a new session if the agent needs them; `yolop apply` merges the session's work with them later",
		root, changes, strings.Join(list, ", "), more, git.ShortOID(head))
	if lead != "" {
		// A new sentence after the instructions' one.
		rest = "Y" + rest[1:]
	}
	return lead + rest
}

// instructionsNote says what the agent reads of a project instructions
// file (named instructions: AGENTS.md) that has uncommitted changes in the
// user's checkout: the session's worktree holds only what is committed.
// "" for any other path. xy is the path's status (porcelain v1).
func instructionsNote(instructions, xy, path string) string {
	if base := path[strings.LastIndexByte(path, '/')+1:]; instructions == "" || base != instructions {
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
