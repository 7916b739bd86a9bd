package app

import (
	"os"

	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/sandbox"
)

// toolSettings reads the [tools] section of the settings file (the same
// file the provider configuration came from).
func toolSettings() (provider.Settings, error) {
	return provider.LoadSettings(provider.DefaultSettingsPath(os.Getenv))
}

// draftSandbox is the sandbox a session that does not exist yet will have,
// so hosts can say what is not confined before its first turn. A settings
// error is left for the first turn to report.
func draftSandbox(level string) sandbox.Status {
	st, err := config.SandboxStatus(level)
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
