package config

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/yolop-dev/yolop/internal/mcp"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// CompactAt reads $YOLOP_COMPACT_TOKENS: the context size in tokens that
// triggers an automatic compaction (0 turns it off); 120000 when unset.
func CompactAt() (int, error) {
	v := os.Getenv("YOLOP_COMPACT_TOKENS")
	if v == "" {
		return 120000, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("YOLOP_COMPACT_TOKENS=%q is not a token count (a whole number, 0 turns automatic compaction off)", v)
	}
	return n, nil
}

// CaptureBudget reads $YOLOP_CAPTURE_BUDGET (a Go duration such as "20s"):
// how long a workspace capture may take before the checkpoint is labelled
// conversation only. Unset means the snapshot engine's default.
func CaptureBudget() (time.Duration, error) {
	v := os.Getenv("YOLOP_CAPTURE_BUDGET")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("YOLOP_CAPTURE_BUDGET=%q is not a positive duration (e.g. 30s or 2m)", v)
	}
	return d, nil
}

// Watch reads $YOLOP_WATCH_BUDGET, the most inotify watches a session's
// file watcher may hold (default: a quarter of the user's free
// max_user_watches; below 2 there is no watcher and every capture walks).
func Watch() (snapshot.WatchOptions, error) {
	v := os.Getenv("YOLOP_WATCH_BUDGET")
	if v == "" {
		return snapshot.WatchOptions{}, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return snapshot.WatchOptions{}, fmt.Errorf("YOLOP_WATCH_BUDGET=%q is not a number of watches (e.g. 8192; 0 means no watcher)", v)
	}
	if n == 0 {
		n = -1 // none: Budget 0 would mean the default
	}
	return snapshot.WatchOptions{Budget: n}, nil
}

// Defaults of [workspace] max_files and max_file_size.
const (
	DefaultMaxFiles    = 200_000
	DefaultMaxFileSize = 50 << 20
)

// Folder reads [workspace] max_files and max_file_size.
func Folder() (worktree.FolderLimits, error) {
	l := worktree.FolderLimits{MaxFiles: DefaultMaxFiles, MaxFileSize: DefaultMaxFileSize}
	path := SettingsPath()
	st, err := provider.LoadSettings(path)
	if err != nil {
		return l, err
	}
	if v := st.Workspace.MaxFiles; v != nil {
		if *v < 1 {
			return l, fmt.Errorf("settings %s: [workspace] max_files = %d: want 1 or more", path, *v)
		}
		l.MaxFiles = *v
	}
	if v := st.Workspace.MaxFileSize; v != nil {
		l.MaxFileSize = int64(*v) // 0: no limit
	}
	return l, nil
}

// SessionMCP is servers as a session starts them: their secrets are
// redacted like the settings' (an editor's servers too), and those without
// a call timeout of their own (an editor's) get st's [mcp] call_timeout.
func SessionMCP(servers []mcp.Server, st provider.Settings) ([]mcp.Server, error) {
	for _, srv := range servers {
		provider.AddMCPSecrets("mcp.servers."+srv.Name, srv.Env, nil, srv.Headers, srv.URL, srv.Args)
	}
	timeout, err := st.MCPCallTimeout("", SettingsPath())
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	return mcp.WithCallTimeout(servers, timeout), nil
}

// Engine is what a session's snapshot engine is opened with from the
// environment and the settings: the capture budget, the file watcher
// (with watch; a oneShot process has no time to walk for its watcher
// before its last capture, so its first capture's walk arms it), and a
// folder's [workspace] max_file_size, read when its engine opens.
func Engine(watch, oneShot bool) (worktree.EngineOptions, error) {
	budget, err := CaptureBudget()
	if err != nil {
		return worktree.EngineOptions{}, err
	}
	w, err := Watch()
	if err != nil {
		return worktree.EngineOptions{}, err
	}
	eo := worktree.EngineOptions{Budget: budget, MaxFileSize: func() (int64, error) {
		lim, err := Folder()
		return lim.MaxFileSize, err
	}}
	if watch {
		w.ArmWithWalk, w.Once = oneShot, oneShot
		eo.Watch = &w
	}
	return eo, nil
}
