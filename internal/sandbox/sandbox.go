// Package sandbox decides how the tools' commands are confined: the level
// in force, the places a command may write, and what to tell the user when
// the kernel cannot confine them. The spawn helper applies the result
// (spawn.Policy) with Landlock in each command's process.
//
// Threat model: the sandbox is against a well-meaning agent's accidents and
// overreach — `git branch -f main`, a build that writes into the user's
// checkout, an "rm -rf" aimed at the wrong directory, a global install into
// the home directory — which checkpoints could not undo — and, for writes
// and secrets, against a hostile command too (below; the README's sandbox
// section has the table of what is stopped and what is open). What it
// leaves open: reads are unrestricted, object
// files of the repository are writable (a hostile command could damage
// objects), other sessions' yolop/ branches share the writable ref
// directory, Unix sockets (a docker daemon, a terminal multiplexer, the
// user's service manager) and UDP are not confined, and the worktree's own
// .git link is writable (it is checked and repaired instead).
//
// What it does stop, also against a hostile command: reading yolop's keys
// through another process. At every level but off (Status.Seals), also
// when the kernel cannot apply it, a command runs without CAP_SYS_ADMIN,
// CAP_PERFMON and CAP_SYS_PTRACE in any capability set (the bounding set
// included), and yolop is undumpable, so neither a command running as the
// same user nor one running as root can read its /proc/<pid>/environ or
// memory; the helpers run in the commands' filtered environment and hold
// no key. And MCP servers live under the same rules as commands: the
// same sandbox and helper, so a daemon a server detaches ends with the
// session, or at the next open when yolop was killed.
//
// Read-only paths. Layout.ReadOnly names paths that commands may read but
// never write, even inside Top. A session that works in the user's own
// checkout plans with
//
//	st, err := sandbox.Plan(cfg, sandbox.Layout{Top: checkout, TmpDir: tmp,
//		ReadOnly: []string{filepath.Join(checkout, ".git")}})
//
// and hands st to the tools as for any session (tools.TaskOptions.Sandbox):
// st.Policy.ReadOnly then makes the spawn helper's second stage bind-mount
// .git read-only in a private mount namespace of every command (with a
// user namespace when yolop is not root) before Landlock, which forbids
// the command to unmount or remount it; a non-root command keeps its own
// uid and holds no capability, a root one loses CAP_SYS_ADMIN. Writes there
// fail with "Read-only file system", and the tools' note tells the model
// why. st.ReadOnly.Enforced says whether that holds on this machine (Plan
// tries the namespaces once per process); when it is false, st.ReadOnly.Why
// says why (the sandbox is not in force, or the kernel's refusal, e.g.
// user namespaces disabled), Warning says so, commands run without the
// read-only mounts, and the caller must guard the paths another way. The
// mounts do not cover another mount of the same filesystem elsewhere, nor
// a submount below a read-only path, which stays as writable as it was.
package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// Level is a sandbox level (the spawn helper's type, which applies it).
type Level = spawn.Level

// Levels.
const (
	Off    = spawn.LevelOff
	Write  = spawn.LevelWrite  // writes confined to what checkpoints cover plus declared caches
	Strict = spawn.LevelStrict // write, and outbound TCP only to listed ports
)

// Landlock ABI versions each level needs: ABI 3 controls truncate, ABI 4
// filters TCP connect by port.
const (
	WriteABI  = 3
	StrictABI = 4
)

// ABIEnv caps the Landlock ABI yolop uses (it can only lower it), to try
// the fallback for older kernels: YOLOP_LANDLOCK_ABI=0 behaves as without
// Landlock.
const ABIEnv = "YOLOP_LANDLOCK_ABI"

// ErrLevel is returned for an unknown level name.
var ErrLevel = fault.Plain("sandbox: unknown level")

// ParseLevel reads a level name (any case, spaces around it ignored); ""
// means the default, write.
func ParseLevel(s string) (Level, error) {
	switch l := Level(strings.ToLower(strings.TrimSpace(s))); l {
	case "":
		return Write, nil
	case Off, Write, Strict:
		return l, nil
	}
	return "", fmt.Errorf("%w %q: use off, write or strict", ErrLevel, s)
}

// Config is the user's choice: the --sandbox flag over [sandbox] settings.
type Config struct {
	Level string
	// Caches replaces the default cache list when non-nil; ExtraCaches is
	// added to whichever list is in use. "~/" is the home directory.
	Caches      []string
	ExtraCaches []string
	// Ports are the TCP ports strict lets commands connect to.
	Ports []int
	// AllowUnconfined lets commands run unconfined (with a warning) when
	// the kernel cannot apply the level; false refuses to run them.
	AllowUnconfined bool
}

// Layout is where a session may write.
type Layout struct {
	// Top is the session worktree's top level (or, without a worktree,
	// the active root): what a checkpoint covers.
	Top string
	// TmpDir is the session's private temporary directory (TMPDIR).
	TmpDir string
	// CommonDir is the repository's git directory and AdminDir the
	// worktree's own under CommonDir/worktrees; both "" without a
	// worktree.
	CommonDir, AdminDir string
	// ReadOnly are absolute paths (directories or files) commands may
	// read but never write, even inside Top: a session that works in
	// the user's own checkout passes <checkout>/.git, so that an agent's
	// git commit, git config or hook edit fails. Each is bind-mounted
	// read-only in a private mount namespace of each command, which
	// Landlock keeps it from unmounting. Plan says in Status.ReadOnly
	// whether that is enforced on this machine; when it is not, commands
	// run without it and the caller must guard those paths otherwise.
	ReadOnly []string
}

// ReadOnly is whether a layout's read-only paths are enforced.
type ReadOnly struct {
	// Paths are Layout.ReadOnly, cleaned.
	Paths []string
	// Enforced: every command gets Paths read-only (Policy.ReadOnly).
	Enforced bool
	// Why says why not, when Paths is not empty and Enforced is false:
	// the sandbox is not in force, or the kernel refused the namespaces
	// (user namespaces disabled, a seccomp filter), in the kernel's words.
	Why string
}

// DefaultCaches are the toolchains' usual cache and module directories.
func DefaultCaches(getenv func(string) string) []string {
	home := getenv("HOME")
	cache := getenv("XDG_CACHE_HOME")
	if cache == "" && home != "" {
		cache = filepath.Join(home, ".cache")
	}
	var out []string
	add := func(p string) {
		if p != "" {
			out = append(out, p)
		}
	}
	if v := getenv("GOCACHE"); v != "" {
		add(v)
	} else if cache != "" {
		add(filepath.Join(cache, "go-build"))
	}
	if v := getenv("GOMODCACHE"); v != "" {
		add(v)
	} else if v := getenv("GOPATH"); v != "" {
		add(filepath.Join(strings.Split(v, string(os.PathListSeparator))[0], "pkg", "mod"))
	} else if home != "" {
		add(filepath.Join(home, "go", "pkg", "mod"))
	}
	if home != "" {
		add(filepath.Join(home, ".npm"))
		add(filepath.Join(home, ".cargo", "registry"))
		add(filepath.Join(home, ".cargo", "git"))
		add(filepath.Join(home, ".m2", "repository"))
		add(filepath.Join(home, ".gradle", "caches"))
	}
	if cache != "" {
		for _, d := range []string{"pip", "yarn", "pnpm", "uv", "node-gyp", "ms-playwright"} {
			add(filepath.Join(cache, d))
		}
	}
	return out
}

// Status is the sandbox a session's commands run under.
type Status struct {
	Requested Level // the configured level
	InForce   Level // the level applied: off, write or strict
	ABI       int   // the kernel's Landlock ABI, 0 when none
	// Why explains InForce when it differs from Requested (or why the
	// requested level is off); "" otherwise.
	Why string
	// Refused: the level cannot be applied and unconfined commands are not
	// allowed; every command is refused with this message.
	Refused string
	Caches  []string
	Ports   []int
	Policy  *spawn.Policy // nil when InForce is off
	// ReadOnly is whether Layout.ReadOnly is enforced, and why not.
	ReadOnly ReadOnly
}

// Seals reports whether commands run without the capabilities that read
// other processes' environment and memory (CAP_SYS_ADMIN, CAP_PERFMON,
// CAP_SYS_PTRACE; see spawn.Spec.Seal): whenever a level other than off
// is configured, also when the kernel cannot apply it and commands run
// unconfined.
func (s Status) Seals() bool { return s.Requested == Write || s.Requested == Strict }

// Warning is what the user must hear once per session about what is not
// confined: the level, and read-only paths that are not enforced ("" when
// the requested level is in force, it is not off, and every read-only path
// is enforced).
func (s Status) Warning() string {
	w := s.levelWarning()
	if s.Policy != nil && s.ReadOnly.Why != "" {
		ro := fmt.Sprintf("%s is not read-only for commands (%s): commands can write it", strings.Join(s.ReadOnly.Paths, ", "), s.ReadOnly.Why)
		if w == "" {
			return ro
		}
		return w + "; " + ro
	}
	return w
}

func (s Status) levelWarning() string {
	switch {
	case s.Refused != "":
		return s.Refused
	case s.Requested == Off:
		return "the sandbox is off (--sandbox off or [sandbox] level = \"off\"): commands can write anywhere you can, and effects outside the workspace are not undone by a rewind"
	case s.InForce != s.Requested:
		return fmt.Sprintf("sandbox level %s is not in force (%s); commands run with level %s: %s", s.Requested, s.Why, s.InForce, s.notConfined())
	}
	return ""
}

func (s Status) notConfined() string {
	switch s.InForce {
	case Off:
		return "writes anywhere you can write and the network are not confined"
	case Write:
		return "outbound network connections are not confined"
	}
	return ""
}

// Describe is the level in force and why, for `yolop version --verbose`.
func (s Status) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sandbox: %s", s.InForce)
	if s.Requested != s.InForce {
		fmt.Fprintf(&b, " (requested %s: %s)", s.Requested, s.Why)
	}
	if s.ABI > 0 {
		fmt.Fprintf(&b, "; Landlock ABI %d", s.ABI)
	} else {
		b.WriteString("; no Landlock")
	}
	if s.Refused != "" {
		b.WriteString("; commands are refused: " + s.Refused)
	}
	switch {
	case s.ReadOnly.Enforced:
		fmt.Fprintf(&b, "; read-only for commands: %s", strings.Join(s.ReadOnly.Paths, ", "))
	case len(s.ReadOnly.Paths) > 0:
		fmt.Fprintf(&b, "; not read-only for commands: %s (%s)", strings.Join(s.ReadOnly.Paths, ", "), s.ReadOnly.Why)
	}
	return b.String()
}

// Plan resolves cfg against the kernel. lay may be zero (version
// --verbose): then no policy is built.
func Plan(cfg Config, lay Layout) (Status, error) {
	level, err := ParseLevel(cfg.Level)
	if err != nil {
		return Status{}, err
	}
	st := Status{Requested: level, InForce: level}
	st.Caches = cfg.Caches
	if st.Caches == nil {
		st.Caches = DefaultCaches(os.Getenv)
	}
	st.Caches = append(append([]string(nil), st.Caches...), cfg.ExtraCaches...)
	for i, c := range st.Caches {
		st.Caches[i] = expandHome(c)
	}
	for _, p := range cfg.Ports {
		if p < 1 || p > 65535 {
			return Status{}, fmt.Errorf("sandbox: port %d is not a TCP port (1-65535)", p)
		}
	}
	st.Ports = cfg.Ports
	abi, abiErr := spawn.ABI()
	if v := os.Getenv(ABIEnv); v != "" {
		// Lower only: a test (or a user checking the fallback) can make
		// yolop behave as on an older kernel, never claim a newer one.
		if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < abi {
			abi = n
			if n == 0 {
				abiErr = fmt.Errorf("%s=0", ABIEnv)
			}
		}
	}
	st.ABI = abi
	for _, p := range lay.ReadOnly {
		if !filepath.IsAbs(p) {
			return Status{}, fmt.Errorf("sandbox: read-only path %q is not absolute", p)
		}
		st.ReadOnly.Paths = append(st.ReadOnly.Paths, filepath.Clean(p))
	}
	if len(st.ReadOnly.Paths) > 0 {
		// Said now; cleared below when the policy enforces them.
		st.ReadOnly.Why = "the sandbox is off"
	}
	if level == Off {
		return st, nil
	}
	need := WriteABI
	if level == Strict {
		need = StrictABI
	}
	if abi < need {
		why := fmt.Sprintf("level %s needs Landlock ABI %d and the kernel has %d", level, need, abi)
		if abiErr != nil || abi == 0 {
			why = "Landlock is not available"
			if abiErr != nil {
				why += " (" + abiErr.Error() + ")"
			}
		}
		st.Why = why
		if len(st.ReadOnly.Paths) > 0 {
			st.ReadOnly.Why = "the sandbox is not in force: " + why
		}
		if !cfg.AllowUnconfined {
			st.Refused = fmt.Sprintf("sandbox level %s cannot be applied: %s, and [sandbox] allow_unconfined is false; set it to true to run commands unconfined, or choose --sandbox off", level, why)
			st.InForce = Off
			return st, nil
		}
		st.InForce = Off
		if level == Strict && abi >= WriteABI {
			st.InForce = Write
		}
	}
	if st.InForce == Off || lay.Top == "" {
		return st, nil
	}
	st.Policy = buildPolicy(st, lay)
	if len(st.ReadOnly.Paths) > 0 {
		if err := readOnlyAvailable(); err != nil {
			st.ReadOnly.Why = err.Error()
		} else {
			st.ReadOnly.Enforced, st.ReadOnly.Why = true, ""
			st.Policy.ReadOnly = append([]string(nil), st.ReadOnly.Paths...)
		}
	}
	return st, nil
}

// readOnlyAvailable is spawn.ReadOnlyAvailable; tests make it fail.
var readOnlyAvailable = spawn.ReadOnlyAvailable

// ProbeEarly starts in the background the check Plan makes for a layout
// with read-only paths (whether this machine can give commands read-only
// paths: one short-lived pair of processes, once per process, unless a
// success under the same conditions is kept in dataDir), so that Plan
// finds it done, or waits only for what is left, instead of running all
// of it on the way to the first capture. The answer is not dropped:
// ReadOnlyAvailable keeps it for Plan, which reports it.
func ProbeEarly(dataDir string) {
	if dataDir != "" {
		spawn.CacheProbe(ProbeCacheFile(dataDir))
	}
	go spawn.ReadOnlyAvailable()
}

// ProbeCacheFile is where a data directory keeps the read-only paths
// check's success (spawn.CacheProbe).
func ProbeCacheFile(dataDir string) string {
	return filepath.Join(dataDir, "probe", "read-only")
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

// Devices are the standard devices a command may write.
var Devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom", "/dev/ptmx"}

// DeviceDirs are device directories a command may write in.
var DeviceDirs = []string{"/dev/pts", "/dev/shm"}

func buildPolicy(st Status, lay Layout) *spawn.Policy {
	p := &spawn.Policy{Level: st.InForce, MinABI: WriteABI}
	if st.InForce == Strict {
		p.MinABI = StrictABI
		for _, port := range st.Ports {
			p.Ports = append(p.Ports, uint16(port))
		}
	}
	p.WriteDirs = append(p.WriteDirs, lay.Top)
	if lay.TmpDir != "" {
		p.WriteDirs = append(p.WriteDirs, lay.TmpDir)
	}
	p.WriteDirs = append(p.WriteDirs, DeviceDirs...)
	p.WriteDirs = append(p.WriteDirs, st.Caches...)
	if lay.CommonDir != "" {
		// What git needs to commit on the session branch: the shared
		// objects, this worktree's admin directory (its HEAD, index,
		// logs, COMMIT_EDITMSG) and the yolop/ branch refs with their
		// logs. Not HEAD, packed-refs, config, hooks, the user's index
		// or any other ref.
		p.WriteDirs = append(p.WriteDirs,
			filepath.Join(lay.CommonDir, "objects"),
			filepath.Join(lay.CommonDir, "refs", "heads", "yolop"),
			filepath.Join(lay.CommonDir, "logs", "refs", "heads", "yolop"))
		if lay.AdminDir != "" {
			p.WriteDirs = append(p.WriteDirs, lay.AdminDir)
		}
	}
	p.WriteFiles = append(p.WriteFiles, Devices...)
	sort.Strings(p.WriteDirs)
	return p
}

// Allowed reports whether path lies in a place the policy lets commands
// write.
func (s Status) Allowed(path string) bool {
	if s.Policy == nil {
		return true
	}
	if _, ro := s.ReadOnlyAt(path); ro {
		return false
	}
	for _, d := range s.Policy.WriteDirs {
		if within(d, path) {
			return true
		}
	}
	for _, f := range s.Policy.WriteFiles {
		if f == path {
			return true
		}
	}
	return false
}

func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// ReadOnlyAt returns the enforced read-only path that path lies in.
func (s Status) ReadOnlyAt(path string) (string, bool) {
	if s.Policy == nil {
		return "", false
	}
	for _, d := range s.Policy.ReadOnly {
		if within(d, path) {
			return d, true
		}
	}
	return "", false
}
