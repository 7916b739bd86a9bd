// Package clitest runs the command line's flag and usage tests in
// process: a factory that opens nothing, and a command run as the root
// would run it, with the options its run function was given.
package clitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/mcp"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/sandbox"
)

// Factory is a factory whose streams are buffers (no terminals) and whose
// every way out of the command line (the data directory, the provider,
// the settings, the session openers, the spare preparer) fails t when
// called: parsing flags reaches none of them. Only the settings'
// workspace mode answers, from cfg.Mode, since the root resolves where a
// new session works before it runs.
func Factory(t testing.TB) (*cmdutil.Factory, *Config) {
	cfg := &Config{t: t}
	f := cmdutil.New(&cmdutil.IOStreams{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	f.IO.SetTerminal(false, false)
	f.Config = cfg
	f.Open = func(context.Context, app.Env, app.Request) (*app.Session, error) {
		t.Error("a session was opened")
		return nil, errors.New("clitest: no session")
	}
	f.OpenLand = func(context.Context, app.Env, app.Request) (land.Lander, error) {
		t.Error("a session was opened")
		return nil, errors.New("clitest: no session")
	}
	f.PrepareSpare = func(string, string) { t.Error("a spare preparation was started") }
	return f, cfg
}

// Config is the settings of Factory: only WorkspaceMode answers.
type Config struct {
	t       testing.TB
	Mode    string // [workspace] mode
	ModeErr error  // a settings file that cannot be read
}

func (c *Config) refuse(what string) error {
	c.t.Errorf("%s was read", what)
	return fmt.Errorf("clitest: no %s", what)
}

func (c *Config) WorkspaceMode() (string, error) { return c.Mode, c.ModeErr }
func (c *Config) DataDir(string) (string, string, error) {
	return "", "", c.refuse("the data directory")
}
func (c *Config) Provider(cmdutil.ProviderFlags) (provider.Config, error) {
	return provider.Config{}, c.refuse("the provider")
}
func (c *Config) MCPServers() ([]mcp.Server, error) { return nil, c.refuse("the MCP servers") }
func (c *Config) Spares() (config.Spares, error)    { return config.Spares{}, c.refuse("the spares") }
func (c *Config) ToolsEnv() (tools.EnvPlan, error) {
	return tools.EnvPlan{}, c.refuse("the tools' env")
}
func (c *Config) SandboxStatus(string) (sandbox.Status, error) {
	return sandbox.Status{}, c.refuse("the sandbox status")
}

// Run runs cmd with the shell words of argv, as the root runs it: under
// parents named by path ("yolop sessions"), so its usage errors name it
// as the user sees it, and with flag errors as usage errors.
func Run(path string, cmd *cobra.Command, argv string) error {
	names := strings.Fields(path)
	root := &cobra.Command{Use: names[0], SilenceErrors: true, SilenceUsage: true}
	root.SetFlagErrorFunc(cmdutil.FlagError)
	var out bytes.Buffer
	root.SetIn(&bytes.Buffer{})
	root.SetOut(&out)
	root.SetErr(&out)
	parent := root
	for _, n := range names[1:] {
		c := &cobra.Command{Use: n}
		parent.AddCommand(c)
		parent = c
	}
	parent.AddCommand(cmd)
	return Exec(root, strings.Join(append(append(names[1:], cmd.Name()), argv), " "))
}

// Exec runs the root command cmd with the shell words of argv.
func Exec(cmd *cobra.Command, argv string) error {
	cmd.SetArgs(Split(argv))
	_, err := cmd.ExecuteContextC(context.Background())
	return err
}

// Parse runs argv through the command newCmd makes from f, under the
// parents path names, with a run function that keeps its options. It
// returns those options (nil when the run function was not reached) and
// the outcome (Outcome).
func Parse[O any](f *cmdutil.Factory, path string, newCmd func(*cmdutil.Factory, func(*O) error) *cobra.Command, argv string) (*O, string) {
	var got *O
	err := Run(path, newCmd(f, func(o *O) error { got = o; return nil }), argv)
	return got, Outcome(err)
}

// Outcome describes err as the edge reads it: "" for none, else its code,
// whether the command reported it as its own ("told": no usage hint, not
// read as an interruption), and its text.
func Outcome(err error) string {
	if err == nil {
		return ""
	}
	var told *cmdutil.ToldError
	if errors.As(err, &told) {
		return fmt.Sprintf("%s (told): %v", fault.Of(told.Err), err)
	}
	return fmt.Sprintf("%s: %v", fault.Of(err), err)
}

// Split splits argv into words at spaces; single quotes keep a word's
// spaces (” is an empty word).
func Split(argv string) []string {
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for _, r := range argv {
		switch {
		case r == '\'':
			in, quoted = !in, true
		case r == ' ' && !in:
			if w.Len() > 0 || quoted {
				words = append(words, w.String())
			}
			w.Reset()
			quoted = false
		default:
			w.WriteRune(r)
		}
	}
	if w.Len() > 0 || quoted {
		words = append(words, w.String())
	}
	return words
}
