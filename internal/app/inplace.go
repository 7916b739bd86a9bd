package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// holdCheckout takes the checkout lock of an in-place session for a turn
// (wait, when the host lives across turns) or a restore. It refuses while
// a git operation is in progress in the checkout. The returned func ends
// the hold (kept while background tasks run).
func (p *Parts) holdCheckout(ctx context.Context, forTurn, wait bool, onUpdate func(agent.Update)) (func(), error) {
	ws := p.Session.Workspace()
	if ws.Kind != session.KindInPlace || p.checkout == nil {
		return func() {}, nil
	}
	if ws.Folder {
		// No git operation of the user's runs in a folder outside git.
	} else if err := land.CheckIdle(ctx, ws.RepoRoot, false); err != nil {
		return nil, &checkpoint.Error{Code: string(fault.CheckoutBusy), Msg: fmt.Sprintf("%v; the session works in your checkout, so its turns and restores are refused until then (nothing ran)", err), Err: err}
	}
	err := p.checkout.Take(ctx, wait && forTurn, func(inUse error) {
		if onUpdate != nil {
			onUpdate(agent.Update{Kind: agent.UpdateWarning, Text: inUse.Error() + " — this turn waits for it"})
		}
	})
	var ie *worktree.CheckoutInUseError
	if errors.As(err, &ie) {
		return nil, &checkpoint.Error{Code: string(fault.CheckoutInUse), Msg: ie.Error(), Err: err}
	}
	if err != nil {
		return nil, err
	}
	return func() { p.checkout.Release(p.Tasks.BackgroundRunning) }, nil
}
