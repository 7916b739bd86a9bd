// Package cmdutil is what every command of the command line shares: the
// factory that hands a command its streams, the global flags, the data
// directory, the provider, the settings and the session openers; the
// errors that say how a failure reaches the edge; argument rules, session
// completion and a few formatting helpers.
package cmdutil

import (
	"context"
	"fmt"
	"sync"

	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/mcp"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/sandbox"
)

// Factory hands every command what it takes from outside the command
// line. A command copies what it needs into its options when it is made;
// none resolves a directory, reads the settings or opens a session by
// itself, so its flags can be tested without any of it.
type Factory struct {
	IO *IOStreams
	// Flags are the global flags, filled by the root before any command
	// runs.
	Flags *GlobalFlags
	// Config reads the settings file and the environment.
	Config Config

	// DataDir is the data directory, resolved once. The first call names
	// a relative one on stderr: the same flag names another directory
	// when run elsewhere.
	DataDir func() (string, error)
	// Provider is the model provider: the root's flags over the settings
	// and the environment.
	Provider func() (provider.Config, error)
	// Open opens or creates a live session (app.Open).
	Open func(context.Context, app.Env, app.Request) (*app.Session, error)
	// OpenLand opens a session for diff, apply and commit, also one
	// another process holds (app.OpenLand).
	OpenLand func(context.Context, app.Env, app.Request) (land.Lander, error)
	// PrepareSpare starts the background preparation of a spare worktree
	// for the repository whose checkout is at repoRoot, and does not wait
	// for it.
	PrepareSpare func(dataDir, repoRoot string)
}

// Config is what the commands read of the settings file and the
// environment (internal/config).
type Config interface {
	// DataDir resolves the data directory from --data-dir (flag) and the
	// environment; note names a relative one.
	DataDir(flag string) (dir, note string, err error)
	Provider(ProviderFlags) (provider.Config, error)
	// WorkspaceMode is [workspace] mode ("" when the settings set none).
	WorkspaceMode() (string, error)
	MCPServers() ([]mcp.Server, error)
	Spares() (config.Spares, error)
	SandboxStatus(level string) (sandbox.Status, error)
	ToolsEnv() (tools.EnvPlan, error)
}

// New is the factory of a yolop process with streams.
func New(streams *IOStreams) *Factory {
	f := &Factory{IO: streams, Flags: &GlobalFlags{OutputFormat: "text"}, Config: settings{}, Open: app.Open, OpenLand: app.OpenLand, PrepareSpare: startPreparer}
	f.DataDir = sync.OnceValues(func() (string, error) {
		dir, note, err := f.Config.DataDir(f.Flags.DataDir)
		if err == nil && note != "" {
			fmt.Fprintln(f.IO.ErrOut, "yolop:", note)
		}
		return dir, err
	})
	f.Provider = func() (provider.Config, error) { return f.Config.Provider(f.Flags.Provider) }
	return f
}

// WithSpares adds the spare settings and the background preparer to env.
func (f *Factory) WithSpares(env app.Env) (app.Env, error) {
	sp, err := f.Config.Spares()
	if err != nil {
		return env, err
	}
	dataDir, prepare := env.DataDir, f.PrepareSpare
	env.Spares = sp
	env.PrepareSpare = func(repoRoot string) { prepare(dataDir, repoRoot) }
	return env, nil
}

// settings is Config from the settings file and the environment.
type settings struct{}

func (settings) DataDir(flag string) (string, string, error) { return config.ResolveDataDir(flag) }
func (settings) Provider(p ProviderFlags) (provider.Config, error) {
	return config.ResolveProvider(p.Name, p.Model, p.BaseURL)
}
func (settings) WorkspaceMode() (string, error)    { return config.WorkspaceMode() }
func (settings) MCPServers() ([]mcp.Server, error) { return config.MCPServers() }
func (settings) Spares() (config.Spares, error)    { return config.ResolveSpares() }
func (settings) ToolsEnv() (tools.EnvPlan, error)  { return config.ToolsEnv() }
func (settings) SandboxStatus(level string) (sandbox.Status, error) {
	return config.SandboxStatus(level)
}
