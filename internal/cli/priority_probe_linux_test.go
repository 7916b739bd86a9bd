package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/yolop-dev/yolop/internal/worktree"
)

// The scripts' gitprobe stands in for git (spare_priority.txtar puts a
// `git` that execs it first on $PATH): it appends the priority it was
// started with to $PRIORITY_LOG_DIR/<what started it>.log (see
// startedBy), and its session's autogroup nice value ("none" in no
// autogroup of its own) to <what started it>.autogroup.log, then becomes the real git
// (the first on $PATH outside $PRIORITY_PROBE_DIR), in the same process.
func gitProbe() {
	if err := probeGit(); err != nil {
		fmt.Fprintln(os.Stderr, "gitprobe:", err)
		os.Exit(2)
	}
}

func probeGit() error {
	prio, err := ownPriority()
	if err != nil {
		return err
	}
	who := startedBy()
	logDir := os.Getenv("PRIORITY_LOG_DIR")
	if logDir == "" {
		return fmt.Errorf("PRIORITY_LOG_DIR is not set")
	}
	if err := appendLine(filepath.Join(logDir, who+".log"), prio); err != nil {
		return err
	}
	nice, ok, err := worktree.AutogroupNice(os.Getpid())
	if err != nil {
		return err
	}
	// "none": in no autogroup of its own (the kernel's default group,
	// where no session was ever made), which a run by hand shares with
	// the script that started it.
	group := "none"
	if ok {
		group = "nice=" + strconv.Itoa(nice)
	}
	if err := appendLine(filepath.Join(logDir, who+".autogroup.log"), group); err != nil {
		return err
	}
	git, err := realGit()
	if err != nil {
		return err
	}
	return syscall.Exec(git, append([]string{"git"}, os.Args[1:]...), os.Environ())
}

// appendLine appends line to the file at path in one write: the O_APPEND
// writes of concurrent gits do not interleave.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ownPriority is "nice=N ioclass=CLASS" of this process (whose one thread
// so far has what the fork gave it).
func ownPriority() (string, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return "", err
	}
	// Field 19 is the nice value; the fields after the command name (in
	// parentheses, which may hold spaces) start at field 3.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 17 {
		return "", fmt.Errorf("/proc/self/stat: %d fields after the name, want 17 or more", len(fields))
	}
	const ioprioWhoProcess, ioprioClassShift = 1, 13
	v, _, errno := unix.Syscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, 0, 0)
	if errno != 0 {
		return "", fmt.Errorf("ioprio_get: %w", errno)
	}
	class := map[uintptr]string{0: "none", 1: "realtime", 2: "best-effort", 3: "idle"}[v>>ioprioClassShift]
	return "nice=" + fields[16] + " ioclass=" + class, nil
}

// startedBy names what started this process: "prepare-spare" when the
// nearest yolop above it prepares a spare (`yolop worktree
// prepare-spare`), "session" when it is another yolop, "script" when no
// yolop is above it.
func startedBy() string {
	for pid := os.Getppid(); pid > 1; {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			break
		}
		args := strings.Split(string(b), "\x00")
		// A session starts its preparer as its own executable, whatever
		// that file is called ($YOLOP_BIN need not be named yolop): the
		// preparer is known by its arguments.
		if slices.Contains(args, "prepare-spare") && slices.Contains(args, "worktree") {
			return "prepare-spare"
		}
		if filepath.Base(args[0]) == "yolop" {
			return "session"
		}
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			break
		}
		s := string(st)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 {
			break
		}
		// Field 4 is the parent's pid.
		if pid, err = strconv.Atoi(fields[1]); err != nil {
			break
		}
	}
	return "script"
}

// realGit is the first git on $PATH outside the probe's directory.
func realGit() (string, error) {
	skip := filepath.Clean(os.Getenv("PRIORITY_PROBE_DIR"))
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" || filepath.Clean(dir) == skip {
			continue
		}
		p := filepath.Join(dir, "git")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("no git on $PATH outside %s", skip)
}
