//go:build !linux

package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
)

// syncEachFile is true where there is no syncfs: every restored file is
// fsynced before it is renamed into place (on darwin os.File.Sync issues
// F_FULLFSYNC), and syncRestored then fsyncs the directories whose entries
// changed.
const syncEachFile = true

// syncRestored fsyncs root and each directory in dirs (relative to root), so
// the renames and removals a restore made are durable.
func syncRestored(root string, dirs []string) error {
	seen := map[string]bool{}
	for _, d := range append([]string{"."}, dirs...) {
		if seen[d] {
			continue
		}
		seen[d] = true
		f, err := os.Open(filepath.Join(root, d))
		if err != nil {
			if os.IsNotExist(err) {
				continue // removed because it became empty; its parent is synced
			}
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("sync %s: %w", filepath.Join(root, d), err)
		}
	}
	return nil
}
