package spawn

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Read-only paths (Policy.ReadOnly). The second stage is started in a new
// mount namespace: as root (with CAP_SYS_ADMIN) a mount namespace alone;
// otherwise a user namespace too, with the user's own uid and gid mapped
// to themselves and CAP_SYS_ADMIN in that namespace passed to the stage as
// an ambient capability. The stage makes every mount private (nothing it
// mounts reaches the user's namespace), bind-mounts each read-only path on
// itself and remounts the bind read-only, then applies Landlock, which
// forbids the command every mount, unmount and remount, and gives the
// capability up before it executes the command: a non-root command runs
// with its own uid and no capability; a root command without
// CAP_SYS_ADMIN in its bounding set (which would let it clone the mount
// tree from under the read-only bind).

// stageAttr is how the helper starts the second stage for p.
func stageAttr(p *Policy) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if p == nil || len(p.ReadOnly) == 0 {
		return attr
	}
	attr.Cloneflags = syscall.CLONE_NEWNS
	if !mountCapable() {
		uid, gid := os.Geteuid(), os.Getegid()
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	return attr
}

// mountCapable: this process is root with CAP_SYS_ADMIN, so a mount
// namespace needs no user namespace.
func mountCapable() bool {
	if os.Geteuid() != 0 {
		return false
	}
	return hasCap(unix.CAP_SYS_ADMIN)
}

func hasCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0
}

// mountReadOnly makes every mount of the stage's new namespace private and
// paths read-only. Each path is opened without following a symlink and
// mounted through its descriptor, so a path swapped meanwhile cannot
// redirect the mount.
func mountReadOnly(paths []string) error {
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	for _, p := range paths {
		if err := bindReadOnly(p); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	return nil
}

func bindReadOnly(p string) error {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFDIR && t != unix.S_IFREG {
		return errors.New("not a directory or regular file")
	}
	at := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.Mount(at, at, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind mount: %w", err)
	}
	// The descriptor names the file under the new mount; the bind itself is
	// reached by the path again, whose last component is now a mount point
	// (which no rename can move).
	top, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(top)
	at = "/proc/self/fd/" + strconv.Itoa(top)
	// A remount must keep the flags the kernel locks on a mount made in a
	// user namespace (nosuid, nodev, noexec, the atime mode).
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(top, &sfs); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(sfs.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	if err := unix.Mount("none", at, "", flags, ""); err != nil {
		return fmt.Errorf("remount read-only: %w", err)
	}
	return nil
}

// giveUpMountCaps runs after Landlock, just before the command is
// executed: the ambient capability of a user-namespace stage is cleared
// (so the command has none), and a root command loses CAP_SYS_ADMIN from
// its bounding set.
func giveUpMountCaps() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	if os.Geteuid() == 0 {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_ADMIN, 0, 0, 0); err != nil {
			return fmt.Errorf("drop CAP_SYS_ADMIN: %w", err)
		}
	}
	return nil
}

// ProbeArg as the first argument makes Main try read-only paths on the
// directory in os.Args[2]: what ReadOnlyAvailable starts.
const ProbeArg = "__yolop-sandbox-probe"

var probe struct {
	once sync.Once
	err  error
	// cache is CacheProbe's file ("" for none).
	mu    sync.Mutex
	cache string
}

// ReadOnlyAvailable reports whether commands can be given read-only paths
// on this machine: nil when they can, otherwise an error saying why not
// (user namespaces disabled, a seccomp filter, no mount namespaces). It
// tries once per process, by starting this binary in the namespaces a
// command would get and making a directory read-only there, unless the
// file CacheProbe named records that the same try succeeded under the
// same conditions.
func ReadOnlyAvailable() error {
	probe.once.Do(func() {
		probe.mu.Lock()
		cache := probe.cache
		probe.mu.Unlock()
		probe.err = cachedProbe(cache, probeKey, runProbe)
	})
	return probe.err
}

// cachedProbe is run's answer, or nil without running it when the file
// cache records a success under the conditions key gives now; a success
// is recorded there.
func cachedProbe(cache string, key func() string, run func() error) error {
	k := ""
	if cache != "" {
		if k = key(); k != "" && readProbeCache(cache) == k {
			return nil
		}
	}
	err := run()
	if err == nil && k != "" {
		// A cache: a failed write only means the next process tries.
		_ = writeProbeCache(cache, k)
	}
	return err
}

// CacheProbe names the file in which ReadOnlyAvailable keeps a success
// for later processes (a data directory's; call it before the first
// ReadOnlyAvailable of the process). The try costs two short-lived
// processes of this binary, tens of milliseconds on the way to the
// first capture of every in-place process, for an answer that changes
// only with what probeKey reads. Only a success is kept: a failure
// (which may be passing: the user namespace limit reached) is tried
// again by the next process.
func CacheProbe(path string) {
	probe.mu.Lock()
	defer probe.mu.Unlock()
	probe.cache = path
}

// probeCacheVersion starts a cache file's line; another one is ignored.
const probeCacheVersion = "yolop-read-only-probe v1 "

// probeKey digests everything the probe's answer depends on: the boot
// (the kernel and its settings since), this process's user, capabilities,
// no_new_privs, seccomp filters, LSM label and namespaces, the sysctls
// that govern user and mount namespaces, and the binary itself (the code
// a command's stage runs). "" when one of them cannot be read: then the
// probe runs.
func probeKey() string {
	h := sha256.New()
	// A file that cannot be read (absent, or EINVAL without an LSM that
	// labels processes) counts by its error.
	read := func(path string) bool {
		b, err := os.ReadFile(path)
		if err != nil {
			b = []byte("error: " + err.Error())
		}
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", path, len(b), b)
		return err == nil
	}
	if !read("/proc/sys/kernel/random/boot_id") {
		return ""
	}
	for _, p := range []string{"/proc/sys/user/max_user_namespaces", "/proc/sys/user/max_mnt_namespaces",
		"/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
		"/proc/self/attr/current"} {
		read(p)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	found := 0
	for _, l := range strings.Split(string(status), "\n") {
		for _, f := range []string{"Uid:", "Gid:", "CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:", "NoNewPrivs:", "Seccomp:", "Seccomp_filters:"} {
			if strings.HasPrefix(l, f) {
				fmt.Fprintf(h, "%s\x00", l)
				found++
			}
		}
	}
	if found < 9 { // Seccomp_filters is missing before Linux 5.9
		return ""
	}
	for _, ns := range []string{"user", "mnt"} {
		l, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return ""
		}
		fmt.Fprintf(h, "%s\x00", l)
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	var st unix.Stat_t
	if err := unix.Stat(exe, &st); err != nil {
		return ""
	}
	fmt.Fprintf(h, "%s\x00%d %d %d %d.%d\x00", exe, st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec)
	return hex.EncodeToString(h.Sum(nil))
}

// readProbeCache returns the key a cache file records ("" when it is
// missing or not one).
func readProbeCache(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 256 {
		return ""
	}
	key, ok := strings.CutPrefix(strings.TrimSuffix(string(b), "\n"), probeCacheVersion)
	if !ok {
		return ""
	}
	return key
}

// writeProbeCache records key in path, replacing it whole (no sync: a
// file lost or torn by a crash is only a missing cache).
func writeProbeCache(path, key string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".probe-*")
	if err != nil {
		return err
	}
	_, werr := f.WriteString(probeCacheVersion + key + "\n")
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

func runProbe() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	dir, err := os.MkdirTemp("", "yolop-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// Through a launcher (probeMain without "inner"): this process is
	// undumpable (Seal), so the id maps of a user namespace, which the
	// parent writes into the child's /proc files, cannot come from it.
	// Neither process needs, or gets, yolop's environment (its keys).
	cmd := exec.Command(exe, ProbeArg, dir)
	cmd.Env = probeEnv()
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	msg := strings.TrimSpace(string(out))
	if msg == "" {
		msg = fmt.Sprintf("the read-only paths probe failed: %v", err)
	}
	return errors.New(msg)
}

// probeEnv is the probe's whole environment: the helper mark, and GORACE
// when it is set. GORACE is no secret and means something only to a
// race-built binary (the tests'): without its atexit_sleep_ms=0 both probe
// processes would sleep a second at exit, in every process that probes.
func probeEnv() []string {
	env := []string{helperEnv + "=1"}
	if v, ok := os.LookupEnv("GORACE"); ok {
		env = append(env, "GORACE="+v)
	}
	return env
}

// probeLaunch is the probe's launcher: it starts the probe itself in the
// namespaces a command's stage gets.
func probeLaunch(dir string) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "find own executable: %v\n", err)
		return 1
	}
	cmd := exec.Command(exe, ProbeArg, dir, "inner")
	cmd.Env = os.Environ()
	cmd.SysProcAttr = stageAttr(&Policy{ReadOnly: []string{dir}})
	out, err := cmd.CombinedOutput()
	if err == nil {
		return 0
	}
	msg := strings.TrimSpace(string(out))
	if msg == "" {
		// The start itself failed: the namespaces were refused.
		msg = nsRefusal(err, cmd.SysProcAttr.Cloneflags)
	}
	fmt.Fprintln(os.Stderr, msg)
	return 1
}

// nsRefusal explains a refused clone into new namespaces.
func nsRefusal(err error, flags uintptr) string {
	what := "a mount namespace"
	if flags&syscall.CLONE_NEWUSER != 0 {
		what = "a user and mount namespace"
	}
	why := ""
	if flags&syscall.CLONE_NEWUSER != 0 {
		if b, rerr := os.ReadFile("/proc/sys/user/max_user_namespaces"); rerr == nil && strings.TrimSpace(string(b)) == "0" {
			why = " (user.max_user_namespaces is 0)"
		} else if b, rerr := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); rerr == nil && strings.TrimSpace(string(b)) == "0" {
			why = " (kernel.unprivileged_userns_clone is 0)"
		} else if b, rerr := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); rerr == nil && strings.TrimSpace(string(b)) == "1" {
			why = " (kernel.apparmor_restrict_unprivileged_userns is 1)"
		}
	}
	return fmt.Sprintf("the kernel refused %s for commands: %v%s", what, unwrapStart(err), why)
}

func unwrapStart(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// probeMain is the probe's child: make os.Args[2] read-only as a command's
// stage would, and check that a write there is refused. Without "inner"
// after the directory it is the launcher (probeLaunch).
func probeMain() int {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "yolop sandbox probe: usage: "+ProbeArg+" DIR")
		return 2
	}
	dir := os.Args[2]
	if len(os.Args) < 4 || os.Args[3] != "inner" {
		return probeLaunch(dir)
	}
	if err := mountReadOnly([]string{dir}); err != nil {
		fmt.Fprintf(os.Stderr, "mount namespaces are unavailable for commands: %v\n", err)
		return 1
	}
	f, err := os.Create(filepath.Join(dir, "probe"))
	if err == nil {
		f.Close()
		fmt.Fprintln(os.Stderr, "a read-only bind mount stayed writable")
		return 1
	}
	if !errors.Is(err, unix.EROFS) {
		fmt.Fprintf(os.Stderr, "a write to a read-only bind mount failed otherwise: %v\n", err)
		return 1
	}
	return 0
}
