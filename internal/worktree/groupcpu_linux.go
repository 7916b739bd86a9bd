package worktree

import (
	"os"
	"strconv"
	"strings"
)

// eachStat calls fn with the fields of /proc/<pid>/stat after the
// process's name (state, ppid, pgrp, session, ...) for each process, until
// fn returns false; ok is false when /proc cannot be read.
func eachStat(fn func(f []string) bool) (ok bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return false
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return false
	}
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		f, ok := statFields(n)
		if !ok {
			continue
		}
		if !fn(f) {
			break
		}
	}
	return true
}

// statFields is the fields of /proc/<pid>/stat after the process's name
// (state, ppid, pgrp, session, ...); ok is false when it cannot be read.
func statFields(pid string) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(s[i+1:]), true
}

// groupCPU is the processor time (clock ticks: user and system, with that
// of their reaped children) of the live processes in the process group
// pgid, from /proc.
func groupCPU(pgid int) (uint64, bool) {
	want := strconv.Itoa(pgid)
	var sum uint64
	ok := eachStat(func(f []string) bool {
		// state(3) ppid(4) pgrp(5) ... utime(14) stime(15) cutime(16)
		// cstime(17), counted from the name's field (2).
		if len(f) < 15 || f[2] != want {
			return true
		}
		for _, k := range f[11:15] {
			if v, err := strconv.ParseUint(k, 10, 64); err == nil {
				sum += v
			}
		}
		return true
	})
	return sum, ok
}

// sessionLive reports whether a process that is not a zombie is left in
// the session sid (from /proc).
func sessionLive(sid int) bool {
	want := strconv.Itoa(sid)
	live := false
	eachStat(func(f []string) bool {
		// state(3) ppid(4) pgrp(5) session(6).
		if len(f) >= 4 && f[3] == want && f[0] != "Z" && f[0] != "X" {
			live = true
			return false
		}
		return true
	})
	return live
}
