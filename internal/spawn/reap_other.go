//go:build !linux

package spawn

import "syscall"

// reap off Linux ends the recorded processes still alive; without /proc it
// cannot find their descendants or the environment marker.
func reap(recs []Record, _ string) (Reaped, error) {
	var res Reaped
	for _, r := range recs {
		if !Alive(r) {
			continue
		}
		_ = syscall.Kill(r.PID, syscall.SIGKILL)
		res.Ended = append(res.Ended, r)
	}
	return res, nil
}
