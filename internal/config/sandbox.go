package config

import (
	"fmt"
	"os"

	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/sandbox"
)

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

// CheckSandboxLevel checks a --sandbox value.
func CheckSandboxLevel(level string) error {
	_, err := sandbox.ParseLevel(level)
	return err
}

// SandboxStatus is the sandbox commands would run under here, for
// `yolop version --verbose`.
func SandboxStatus(level string) (sandbox.Status, error) {
	st, err := Settings()
	if err != nil {
		return sandbox.Status{}, err
	}
	return sandbox.Plan(SandboxConfig(level, st), sandbox.Layout{})
}

// ToolsEnv says where the tools' commands would get their environment
// from in this process, for `yolop version --verbose`.
func ToolsEnv() (tools.EnvPlan, error) {
	st, err := Settings()
	if err != nil {
		return tools.EnvPlan{}, err
	}
	return tools.PlanEnv(st.Tools.Env, os.Environ()), nil
}

// Sandbox is the sandbox a session's commands run under: the one the user
// chose (level over the settings st) over the layout of its workspace,
// whose temporary directory it creates.
func Sandbox(level string, st provider.Settings, lay sandbox.Layout) (sandbox.Status, error) {
	if err := os.MkdirAll(lay.TmpDir, 0o700); err != nil {
		return sandbox.Status{}, fmt.Errorf("create the commands' temporary directory: %w", err)
	}
	return sandbox.Plan(SandboxConfig(level, st), lay)
}
