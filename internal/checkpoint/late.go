package checkpoint

import (
	"context"

	"github.com/yolop-dev/yolop/internal/agent/tools"
)

// Late is the controller as the checkpoint tool sees it (tools.Checkpoints)
// before it exists: a session's tools are built before its controller,
// whose runtime needs them; Set gives it once the controller is made.
type Late struct{ c *Controller }

// Set makes c the controller the tool reaches.
func (l *Late) Set(c *Controller) { l.c = c }

func (l *Late) ListForModel(ctx context.Context) (string, error) { return l.c.ListForModel(ctx) }

func (l *Late) BranchesForModel(ctx context.Context) (string, error) {
	return l.c.BranchesForModel(ctx)
}

func (l *Late) QueuePreview(ctx context.Context, r tools.CheckpointRequest) (string, error) {
	return l.c.QueuePreview(ctx, r)
}
