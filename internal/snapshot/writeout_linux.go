package snapshot

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteOut starts f's data on its way to the device without waiting.
func startWriteOut(f *os.File) error {
	return unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}

// waitWriteOut waits until f's data is on the device (in its cache: a
// later sync of any file flushes that), as git's batch mode does for each
// object. Started first for every file, the writes overlap.
func waitWriteOut(f *os.File) error {
	return unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
}
