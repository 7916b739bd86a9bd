package snapshot

import (
	"syscall"
	"time"
)

// statTimes are a file's inode change and modification times, as git
// keeps them in an index entry.
func statTimes(st *syscall.Stat_t) (ctime, mtime time.Time) {
	return time.Unix(st.Ctim.Sec, st.Ctim.Nsec), time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
}
