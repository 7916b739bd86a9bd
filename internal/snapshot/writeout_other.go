//go:build !linux

package snapshot

import "os"

// startWriteOut does nothing without Linux's sync_file_range.
func startWriteOut(*os.File) error { return nil }

// waitWriteOut syncs f: without Linux's sync_file_range, each object is
// synced on its own.
func waitWriteOut(f *os.File) error { return f.Sync() }
