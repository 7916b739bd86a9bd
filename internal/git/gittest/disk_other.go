//go:build !linux

package gittest

import "testing"

// SmallDisk skips the test: a small file system is mounted only on Linux.
func SmallDisk(t testing.TB, size int) string {
	t.Helper()
	t.Skip("disk-full test skipped: mounting a small tmpfs is Linux-only")
	return ""
}

// Fill is unused where SmallDisk skips.
func Fill(t testing.TB, path string) { t.Helper() }
