// Package blocklist names the directories that checkpoints never capture,
// restores never touch and the file tools never write: one list, read by
// the snapshot engine and the tools alike, so what the agent may write and
// what a rewind can undo never drift apart.
package blocklist

// Dirs are matched by name at any depth.
var Dirs = []string{".git", "node_modules", "target", "dist", "build", ".next", ".venv", "venv", ".tox", ".gradle"}

// Contains reports whether name (one path component) is blocklisted.
func Contains(name string) bool {
	for _, d := range Dirs {
		if d == name {
			return true
		}
	}
	return false
}
