package spawn

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// reapWait bounds how long Reap waits for killed processes to disappear.
const reapWait = 5 * time.Second

func reap(recs []Record, session string) (Reaped, error) {
	skip := ancestors()
	marker := SessionEnv + "=" + session
	known := map[int]Record{}
	for _, r := range recs {
		if Alive(r) && !skip[r.PID] {
			known[r.PID] = r
		}
	}
	// Freeze what is found so that nothing forks away between the scan
	// and the kill, then look again for what was forked meanwhile.
	targets := map[int]Record{}
	for range 50 {
		found := map[int]bool{}
		for pid := range known {
			found[pid] = true
		}
		if session != "" {
			for _, pid := range pids() {
				if !skip[pid] && sameUser(pid) && environHas(pid, marker) {
					found[pid] = true
				}
			}
		}
		for pid := range found {
			for _, d := range descendants(pid) {
				if !skip[d] {
					found[d] = true
				}
			}
		}
		grew := false
		for pid := range found {
			if _, ok := targets[pid]; ok {
				continue
			}
			r, ok := known[pid]
			if !ok {
				id, err := Identify(pid)
				if err != nil {
					continue
				}
				r = id
				r.Command = cmdline(pid)
			}
			targets[pid] = r
			grew = true
			_ = syscall.Kill(pid, syscall.SIGSTOP)
		}
		if !grew {
			break
		}
	}
	for pid := range targets {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	var res Reaped
	deadline := time.Now().Add(reapWait)
	for pid, r := range targets {
		for Alive(r) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if Alive(r) {
			res.Left = append(res.Left, r)
		} else {
			res.Ended = append(res.Ended, targets[pid])
		}
	}
	return res, nil
}

func cmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
