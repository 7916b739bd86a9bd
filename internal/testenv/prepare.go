package testenv

import (
	"bytes"
	"os"
	"path/filepath"
)

// Preparing reports whether a spare preparation (`yolop worktree
// prepare-spare`) for the data directory dataDir is alive: its command
// line names both. A zombie's command line is empty, so one found is
// alive. (Linux: elsewhere there is no /proc, and none is found.)
func Preparing(dataDir string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte("prepare-spare")) && bytes.Contains(b, []byte(dataDir)) {
			return true
		}
	}
	return false
}
