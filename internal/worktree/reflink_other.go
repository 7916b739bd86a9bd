//go:build !linux

package worktree

import (
	"errors"
	"os"
)

// reflink is Linux's FICLONE; elsewhere files are copied.
func reflink(dst, src *os.File) error { return errors.ErrUnsupported }
