package spawn

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// stat is what Reap and the helper need from /proc/<pid>/stat.
type stat struct {
	state byte
	ppid  int
	start uint64
}

func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses itself; the fields after the last ')' are plain.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("parse /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return stat{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return stat{}, fmt.Errorf("parse /proc/%d/stat: ppid: %w", pid, err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return stat{}, fmt.Errorf("parse /proc/%d/stat: start time: %w", pid, err)
	}
	return stat{state: f[0][0], ppid: ppid, start: start}, nil
}

var (
	bootOnce sync.Once
	bootID   string
)

// BootID is the kernel's id of the current boot ("" when unknown).
func BootID() string {
	bootOnce.Do(func() {
		if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
			bootID = strings.TrimSpace(string(b))
		}
	})
	return bootID
}

// Identify returns the record of a running process.
func Identify(pid int) (Record, error) {
	st, err := readStat(pid)
	if err != nil {
		return Record{}, err
	}
	return Record{PID: pid, Start: st.start, Boot: BootID()}, nil
}

// Alive reports whether the process r names still runs (a zombie does not:
// it can no longer write anything).
func Alive(r Record) bool {
	if r.PID <= 0 || r.Boot != BootID() {
		return false
	}
	st, err := readStat(r.PID)
	return err == nil && st.start == r.Start && st.state != 'Z' && st.state != 'X'
}

// pids lists the processes in /proc.
func pids() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// children maps each live process to its children.
func children() map[int][]int {
	m := map[int][]int{}
	for _, pid := range pids() {
		st, err := readStat(pid)
		if err != nil || st.state == 'Z' || st.state == 'X' {
			continue
		}
		m[st.ppid] = append(m[st.ppid], pid)
	}
	return m
}

// descendants lists every live descendant of root (root excluded).
func descendants(root int) []int {
	kids := children()
	var out []int
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range kids[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// environHas reports whether process pid was started with kv in its
// environment.
func environHas(pid int, kv string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, e := range bytes.Split(b, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// sameUser reports whether pid runs as this process's real user.
func sameUser(pid int) bool {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/"+strconv.Itoa(pid), &st); err != nil {
		return false
	}
	return int(st.Uid) == os.Getuid()
}

// ancestors is this process and its ancestors: never Reap's targets.
func ancestors() map[int]bool {
	m := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !m[pid]; {
		m[pid] = true
		st, err := readStat(pid)
		if err != nil {
			break
		}
		pid = st.ppid
	}
	return m
}

// childrenOf lists the live children of pid.
func childrenOf(pid int) []int {
	var out []int
	for _, p := range pids() {
		if st, err := readStat(p); err == nil && st.ppid == pid && st.state != 'Z' && st.state != 'X' {
			out = append(out, p)
		}
	}
	return out
}
