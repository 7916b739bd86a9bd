package app

import (
	"os"

	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/sandbox"
)

// toolSettings reads the [tools] section of the settings file (the same
// file the provider configuration came from).
func toolSettings() (provider.Settings, error) {
	return provider.LoadSettings(provider.DefaultSettingsPath(os.Getenv))
}

// SandboxConfig is the sandbox the user chose: the --sandbox flag (level,
// "" for the settings' or the default) over the settings file.
func SandboxConfig(level string, st provider.Settings) sandbox.Config {
	cfg := sandbox.Config{Level: st.Sandbox.Level, Caches: st.Sandbox.Caches, ExtraCaches: st.Sandbox.ExtraCaches, Ports: st.Sandbox.Ports, AllowUnconfined: true}
	if level != "" {
		cfg.Level = level
	}
	if st.Sandbox.AllowUnconfined != nil {
		cfg.AllowUnconfined = *st.Sandbox.AllowUnconfined
	}
	return cfg
}

// ToolsEnv says where the tools' commands would get their environment
// from in this process, for `yolop version --verbose`.
func ToolsEnv() (tools.EnvPlan, error) {
	st, err := toolSettings()
	if err != nil {
		return tools.EnvPlan{}, err
	}
	return tools.PlanEnv(st.Tools.Env, os.Environ()), nil
}

// SandboxStatus is the sandbox commands would run under here, for
// `yolop version --verbose`.
func SandboxStatus(level string) (sandbox.Status, error) {
	st, err := toolSettings()
	if err != nil {
		return sandbox.Status{}, err
	}
	return sandbox.Plan(SandboxConfig(level, st), sandbox.Layout{})
}

// CheckSandboxLevel checks a --sandbox value.
func CheckSandboxLevel(level string) error {
	_, err := sandbox.ParseLevel(level)
	return err
}

// draftSandbox is the sandbox a session that does not exist yet will have,
// so hosts can say what is not confined before its first turn. A settings
// error is left for the first turn to report.
func draftSandbox(level string) sandbox.Status {
	st, err := SandboxStatus(level)
	if err != nil {
		return sandbox.Status{}
	}
	return st
}

// sandboxInfo is the sandbox part of Info.
func sandboxInfo(in *Info, st sandbox.Status) {
	in.Sandbox = string(st.InForce)
	if w := st.Warning(); w != "" {
		in.Warnings = []string{w}
	}
}
