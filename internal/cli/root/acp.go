package root

import (
	"context"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/host/acp"
	"github.com/yolop-dev/yolop/internal/mcp"
)

// runACP serves the Agent Client Protocol on the streams until the editor
// hangs up or the user stops yolop.
func runACP(o *RootOptions, opts app.Options) error {
	err := acp.Serve(o.Ctx, o.IO.In, o.IO.Out, acpOpener{base: opts, open: o.Open}, o.IO.ErrOut)
	if err != nil && o.Ctx.Err() == nil {
		return err
	}
	return nil
}

// acpOpener opens app sessions for the ACP host.
type acpOpener struct {
	base app.Options
	open func(context.Context, app.Options) (*app.Session, error)
}

func (a acpOpener) New(ctx context.Context, cwd string, servers []mcp.Server) (acp.Session, error) {
	o := a.base
	// The worktree is claimed (or checked out) detached as soon as the
	// session opens; the session, its branch named from the first prompt,
	// is made at that prompt. A session opened and never used leaves
	// nothing behind but its worktree, given back as a spare.
	o.Dir, o.Early = cwd, true
	o.MCP = append(append([]mcp.Server(nil), o.MCP...), servers...)
	o.ClientMCP = len(servers) > 0
	s, err := a.open(ctx, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (a acpOpener) Load(ctx context.Context, id, cwd string, servers []mcp.Server) (acp.Session, error) {
	o := a.base
	o.SessionID = id
	o.MCP = append(append([]mcp.Server(nil), o.MCP...), servers...)
	o.ClientMCP = len(servers) > 0
	if cwd != "" {
		o.Dir = cwd
	}
	s, err := a.open(ctx, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}
