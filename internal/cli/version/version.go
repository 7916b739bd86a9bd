// Package version is `yolop version`: the version, and with --verbose the
// sandbox level in force and where the tools' commands get their
// environment.
package version

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/buildinfo"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
)

// VersionOptions are what `yolop version` reads.
type VersionOptions struct {
	IO     *cmdutil.IOStreams
	Flags  *cmdutil.GlobalFlags // --output-format, --sandbox
	Config cmdutil.Config

	Verbose bool
}

// NewCmdVersion makes `yolop version`; runF, when set, runs instead of
// versionRun.
func NewCmdVersion(f *cmdutil.Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: f.IO, Flags: f.Flags, Config: f.Config}
	cmd := &cobra.Command{
		Use:     "version",
		Example: "  yolop version\n  yolop version --verbose --sandbox strict",
		Short:   "Print yolop's version (--verbose: and the sandbox level in force, and why, and where commands get their environment)",
		Args:    cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			// Only --verbose reads the sandbox level.
			if opts.Verbose {
				if err := opts.Flags.CheckSandbox(); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Verbose, "verbose", false, "also report the sandbox level in force and why, and where the tools' commands get their environment")
	return cmd
}

func versionRun(opts *VersionOptions) error {
	out := opts.IO.Out
	if !opts.Verbose {
		if opts.Flags.JSON() {
			return cmdutil.WriteJSON(out, versionJSON{Version: buildinfo.Version()})
		}
		_, err := fmt.Fprintln(out, "yolop", buildinfo.Version())
		return err
	}
	st, err := opts.Config.SandboxStatus(opts.Flags.Sandbox)
	if err != nil {
		return err
	}
	env, err := opts.Config.ToolsEnv()
	if err != nil {
		return err
	}
	if opts.Flags.JSON() {
		return cmdutil.WriteJSON(out, versionJSON{Version: buildinfo.Version(), Sandbox: &sandboxJSON{
			Requested: string(st.Requested), InForce: string(st.InForce), LandlockABI: st.ABI, Why: st.Why,
			Refused: st.Refused, Caches: cmdutil.NonNil(st.Caches), Ports: cmdutil.NonNil(st.Ports), Warning: st.Warning(),
		}, ToolsEnv: &toolsEnvJSON{Source: env.Source, Fallback: env.Fallback, Bash: env.Bash}})
	}
	fmt.Fprintln(out, "yolop", buildinfo.Version())
	fmt.Fprintln(out, st.Describe())
	fmt.Fprintln(out, "Commands run in "+env.Describe()+".")
	if w := st.Warning(); w != "" {
		fmt.Fprintln(out, "warning:", w)
	}
	return nil
}

// versionJSON is `yolop version --output-format json`; sandbox only with
// --verbose.
type versionJSON struct {
	Version  string        `json:"version"`
	Sandbox  *sandboxJSON  `json:"sandbox,omitempty"`
	ToolsEnv *toolsEnvJSON `json:"tools_env,omitempty"`
}

// toolsEnvJSON is where the tools' commands get their environment.
type toolsEnvJSON struct {
	Source   string `json:"source"`             // inherit or login
	Fallback string `json:"fallback,omitempty"` // why login although inherit was asked for
	Bash     string `json:"bash"`
}

type sandboxJSON struct {
	Requested   string   `json:"requested"`
	InForce     string   `json:"in_force"`
	LandlockABI int      `json:"landlock_abi"`
	Why         string   `json:"why,omitempty"`
	Refused     string   `json:"refused,omitempty"`
	Caches      []string `json:"caches"`
	Ports       []int    `json:"ports"`
	Warning     string   `json:"warning,omitempty"`
}
