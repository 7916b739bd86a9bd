package config

import (
	"fmt"
	"os"
	"sort"

	"github.com/yolop-dev/yolop/internal/mcp"
	"github.com/yolop-dev/yolop/internal/provider"
)

// SettingsPath is the settings file of this process's environment
// ($XDG_CONFIG_HOME/yolop/settings.toml or ~/.config/yolop/settings.toml).
func SettingsPath() string { return provider.DefaultSettingsPath(os.Getenv) }

// Settings reads the settings file (zero Settings when there is none).
// Reading it makes its secrets known to the redaction.
func Settings() (provider.Settings, error) { return provider.LoadSettings(SettingsPath()) }

// ResolveProvider merges the provider flags with the environment and the
// settings file.
func ResolveProvider(name, model, baseURL string) (provider.Config, error) {
	flags := provider.Config{Provider: name, Model: model, BaseURL: baseURL}
	return provider.Resolve(flags, os.Getenv, SettingsPath())
}

// MCPServers reads the MCP servers of the settings file, sorted by name.
func MCPServers() ([]mcp.Server, error) {
	path := SettingsPath()
	st, err := provider.LoadSettings(path)
	if err != nil {
		return nil, err
	}
	// A bad [mcp] call_timeout is reported here, before any session
	// opens, also when only an editor configures servers.
	if _, err := st.MCPCallTimeout("", path); err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	names := make([]string, 0, len(st.MCP.Servers))
	for n := range st.MCP.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []mcp.Server
	for _, n := range names {
		c := st.MCP.Servers[n]
		s := mcp.Server{Name: n, Command: c.Command, Args: c.Args, Env: c.Env, URL: c.URL, Headers: c.Headers}
		if s.CallTimeout, err = st.MCPCallTimeout(n, path); err != nil {
			return nil, fmt.Errorf("settings: %w", err)
		}
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("settings: %w", err)
		}
		out = append(out, s)
	}
	return out, nil
}
