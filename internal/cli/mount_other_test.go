//go:build !linux

package cli_test

import "errors"

func mountTmpfs(dir, size string) error {
	return errors.New("a small tmpfs is mounted only on Linux")
}

func unmount(dir string) error { return nil }
