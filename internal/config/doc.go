// Package config turns the settings file (parsed by provider.LoadSettings)
// and yolop's environment variables into the typed values the rest of
// yolop asks for: the data directory (and the refusal of one inside the
// repository), the provider, the MCP servers and their call timeout, the
// workspace mode, a folder's capture limits, the spare worktrees, the
// sandbox, where the tools' commands get their environment, and what a
// session reads when it opens (compaction threshold, capture budget,
// watcher budget). Every setting is checked here, with the words the user
// sees when it is wrong; no other package reads $YOLOP_DATA_DIR,
// $XDG_DATA_HOME, $YOLOP_WORKTREE_SPARES, $YOLOP_COMPACT_TOKENS,
// $YOLOP_CAPTURE_BUDGET or $YOLOP_WATCH_BUDGET.
package config
