package snapshot

import (
	"os"
	"syscall"
)

// statData is the stat data git keeps of fi in an index entry, mode and
// all (mode is the entry's, set by the caller); false when fi has none.
func statData(fi os.FileInfo) (indexStat, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return indexStat{}, false
	}
	return indexStat{
		ctimeSec: uint32(st.Ctimespec.Sec), ctimeNsec: uint32(st.Ctimespec.Nsec),
		mtimeSec: uint32(st.Mtimespec.Sec), mtimeNsec: uint32(st.Mtimespec.Nsec),
		dev: uint32(st.Dev), ino: uint32(st.Ino),
		uid: st.Uid, gid: st.Gid, size: uint32(st.Size),
	}, true
}
