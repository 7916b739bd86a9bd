package root

import (
	"context"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/host/acp"
	"github.com/yolop-dev/yolop/internal/mcp"
)

// runACP serves the Agent Client Protocol on the streams until the editor
// hangs up or the user stops yolop.
func runACP(o *RootOptions, env app.Env) error {
	err := acp.Serve(o.Ctx, o.IO.In, o.IO.Out, acpOpener{env: env, new: o.newSession(app.Early), open: o.Open}, o.IO.ErrOut)
	if err != nil && o.Ctx.Err() == nil {
		return err
	}
	return nil
}

// acpOpener opens app sessions for the ACP host.
type acpOpener struct {
	env  app.Env
	new  app.New // a new session, made early
	open func(context.Context, app.Env, app.Request) (*app.Session, error)
}

// New opens a new session in the editor's project directory cwd, with the
// editor's MCP servers: its worktree is claimed (or checked out) detached
// as soon as the session opens; the session, its branch named from the
// first prompt, is made at that prompt. A session opened and never used
// leaves nothing behind but its worktree, given back as a spare.
func (a acpOpener) New(ctx context.Context, cwd string, servers []mcp.Server) (acp.Session, error) {
	env := a.env
	env.Dir, env.EditorMCP = cwd, servers
	s, err := a.open(ctx, env, a.new)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (a acpOpener) Load(ctx context.Context, id, cwd string, servers []mcp.Server) (acp.Session, error) {
	env := a.env
	env.EditorMCP = servers
	if cwd != "" {
		env.Dir = cwd
	}
	s, err := a.open(ctx, env, app.Resume{ID: id})
	if err != nil {
		return nil, err
	}
	return s, nil
}
