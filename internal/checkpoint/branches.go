package checkpoint

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// ActionBranch switches to another branch of the conversation.
const ActionBranch Action = "branch"

// CodeUnknownBranch is the refusal for a branch id that does not exist.
const CodeUnknownBranch = string(fault.UnknownBranch)

// BranchRow is one line of a branch listing (/branches, `yolop checkpoints
// ID --branches`).
type BranchRow struct {
	ID         string     `json:"id"`
	Active     bool       `json:"active"`
	ForkedFrom string     `json:"forked_from"` // last turn shared with the branch it came from ("" = the start)
	Tip        string     `json:"tip"`         // newest turn ("" = empty conversation)
	Turns      int        `json:"turns"`       // turns from the start to the tip
	LeftAt     *time.Time `json:"left_at"`     // null while active
	// Own is the number of turns after ForkedFrom; TipPrompt labels the tip.
	Own       int    `json:"own_turns"`
	TipPrompt string `json:"tip_prompt"`
	// Workspace says whether switching can restore the files it was left
	// with (a recovery snapshot exists).
	Workspace bool `json:"workspace"`
}

func (c *Controller) branchesLocked() []timeline.Branch {
	return c.state.Branches()
}

// Branches lists the session's branches: the active one and every
// abandoned one, in order of birth.
func (c *Controller) Branches() []BranchRow {
	c.mu.Lock()
	defer c.mu.Unlock()
	bs := c.branchesLocked()
	out := make([]BranchRow, 0, len(bs))
	for _, b := range bs {
		row := BranchRow{ID: b.ID, Active: b.Active, ForkedFrom: b.ForkedFrom, Tip: b.Tip, Turns: b.Turns, Own: b.Own, Workspace: b.End != nil && c.cfg.Snapshots != nil}
		if !b.LeftAt.IsZero() {
			t := JSONTime(b.LeftAt)
			row.LeftAt = &t
		}
		if cp := c.state.Checkpoints[b.Tip]; cp != nil {
			row.TipPrompt = label(cp.Prompt)
		}
		out = append(out, row)
	}
	return out
}

// BranchesForModel implements the checkpoint tool's branches action.
func (c *Controller) BranchesForModel(ctx context.Context) (string, error) {
	rows := c.Branches()
	if len(rows) == 0 {
		return "No branches yet: the session has no turns.", nil
	}
	var b strings.Builder
	b.WriteString("Branches of this session (only the active one is in your context; switching to another needs the user's confirmation):\n")
	for _, r := range rows {
		state := "abandoned"
		if r.Active {
			state = "active"
		}
		tip := r.Tip
		if tip == "" {
			tip = "(empty)"
		}
		from := r.ForkedFrom
		if from == "" {
			from = "the start"
		}
		fmt.Fprintf(&b, "- %s [%s] tip %s, %d turns (%d after %s)\n", r.ID, state, tip, r.Turns, r.Own, from)
	}
	return b.String(), nil
}

// resolveBranchLocked finds the branch a /branch line names.
func (c *Controller) resolveBranchLocked(id string) (*timeline.Branch, error) {
	id = strings.ToLower(strings.TrimSpace(id))
	if id == "" {
		return nil, &Error{Code: CodeUnknownBranch, Msg: "which branch? /branches lists them (b1, b2, …)"}
	}
	for _, b := range c.branchesLocked() {
		if b.ID == id {
			if b.Active {
				return nil, &Error{Code: CodeUnknownBranch, Msg: fmt.Sprintf("%s is the active branch already; /branches lists the others", id)}
			}
			bb := b
			return &bb, nil
		}
	}
	return nil, &Error{Code: CodeUnknownBranch, Msg: fmt.Sprintf("unknown branch %q in session %s: /branches lists them", id, c.cfg.SessionID)}
}

// planBranchLocked resolves /branch <id> [mode].
func (c *Controller) planBranchLocked(req Request) (*plan, error) {
	b, err := c.resolveBranchLocked(req.Target)
	if err != nil {
		return nil, err
	}
	hasWS := b.End != nil && c.cfg.Snapshots != nil
	mode := req.Mode
	if mode == "" {
		mode = ModeConversation
		if hasWS {
			mode = ModeBoth
		}
	}
	if mode.HasWorkspace() && !hasWS {
		why := c.cfg.NoWorkspace
		if why == "" {
			why = "no snapshot of its files was taken when it was left"
		}
		return nil, &Error{Code: CodeNoWorkspace, Msg: fmt.Sprintf("branch %s has no workspace snapshot (%s), so only `/branch %s conversation` is possible", b.ID, why, b.ID)}
	}
	p := &plan{action: ActionBranch, target: b.Tip, branch: b.ID, mode: mode, newHead: c.state.Head}
	if mode.HasConversation() {
		p.newHead = b.Tip
	}
	if mode.HasWorkspace() {
		p.targetTree = b.End.Tree
	}
	for _, ab := range c.branchesLocked() {
		if ab.Active {
			p.branchLeft = ab.ID
		}
	}
	return p, nil
}

// crossBranchLocked names, for a rewind to a checkpoint that is not on
// the active branch, the branch that holds it (its own turn first) and the
// branch it leaves.
func (c *Controller) crossBranchLocked(p *plan) {
	bs := c.branchesLocked()
	if own := timeline.BranchOf(bs, c.state, p.target); len(own) > 0 {
		p.branch = own[0].ID
	}
	for _, b := range bs {
		if b.Active {
			p.branchLeft = b.ID
		}
	}
}

// ActiveBranch is the id of the branch the conversation is on ("" before
// the first turn).
func (c *Controller) ActiveBranch() string {
	id := ""
	for _, b := range c.Branches() {
		if b.Active {
			id = b.ID
		}
	}
	return id
}
