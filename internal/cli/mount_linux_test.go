package cli_test

import "golang.org/x/sys/unix"

func mountTmpfs(dir, size string) error {
	return unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size)
}

func unmount(dir string) error { return unix.Unmount(dir, unix.MNT_DETACH) }
