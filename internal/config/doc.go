// Package config turns the settings file (parsed by provider.LoadSettings)
// and yolop's environment variables into the typed values the rest of
// yolop asks for: the data directory, the provider, the MCP servers, the
// workspace mode, the spare worktrees, the sandbox and where the tools'
// commands get their environment. Every setting is checked here, with the
// words the user sees when it is wrong; no other package reads
// $YOLOP_DATA_DIR, $XDG_DATA_HOME or $YOLOP_WORKTREE_SPARES.
package config
