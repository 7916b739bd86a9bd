package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The watcher is raw inotify (golang.org/x/sys/unix, already a dependency)
// rather than fsnotify: a capture must know exactly when the watcher can
// vouch for its change set, which takes the watch descriptors themselves
// (a renamed directory keeps its descriptor, and the path it stands for
// changes with it; fsnotify reports stale paths under a renamed parent),
// the move cookies, IN_Q_OVERFLOW, IN_ONLYDIR|IN_DONT_FOLLOW|IN_EXCL_UNLINK,
// and control over how many watches are spent.

const watchMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_CREATE |
	unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// watchMaxDirty bounds the change set: beyond it the next capture walks.
const watchMaxDirty = 20000

// barrierTimeout bounds the wait for the flush barrier's own event.
const barrierTimeout = 5 * time.Second

// watcher records the paths of a worktree changed since the last capture.
type watcher struct {
	f       *os.File // the inotify instance, non-blocking, read through the poller
	fd      int
	root    string
	markDir string // private directory (in the state dir) holding the barrier markers
	// budget is the most watches this watcher may hold, budgetWhy why
	// it may hold none ("" when it may hold some); both are read once
	// budgetKnown is closed (limit).
	budget      int
	budgetWhy   string
	budgetKnown chan struct{}
	// provisional is what a walk may watch before the budget is known:
	// an eighth of the user's limit (where it is at least 65,536) is
	// within a quarter of the free watches whenever the user's other
	// processes hold at most half of it. Past it the walk waits for the
	// count, and a walk that ends over the budget gives its watches back
	// (walkArm.finish). 0: wait for the budget.
	provisional int

	mu       sync.Mutex
	cond     *sync.Cond
	wds      map[int32]string // watch descriptor -> worktree-relative directory ("" is the root)
	dirs     map[string]int32
	markWD   int32
	dirty    map[string]bool   // paths changed (files, symlinks, names that were either)
	gone     map[string]bool   // directories removed or moved away with what they held
	detached map[uint32]string // move cookie -> directory moved away, not yet seen arriving
	full     string            // why the next capture must walk ("" = it need not)
	rearm    bool              // the watches must be rebuilt before that walk
	dead     string            // the watcher stopped for good (why)
	armed    bool              // the first set of watches is in place
	arming   atomic.Bool       // the first arm runs (captures walk meanwhile)
	seq      uint64            // last barrier marker written
	seen     uint64            // last barrier marker read back
	closed   bool

	// byWalk: the watches are added by the next capture's walk
	// (WatchOptions.ArmWithWalk), never in the background; unarmed says
	// why the last such walk did not arm it.
	byWalk  bool
	unarmed string

	overflowHook bool // tests: the next event batch is treated as a queue overflow
	done         chan struct{}
}

// watchable reports why root cannot be watched ("" when it can).
func watchable(root string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return "cannot tell the file system: " + err.Error()
	}
	switch uint32(st.Type) {
	case 0x6969, 0x517B, 0xFF534D42, 0xFE534D42, 0x01021997, 0x65735546, 0x00C36400,
		0x5346414F, 0x73757245, 0x564c, 0x7461636f, 0x01161970, 0x0BD00BD0, 0x47504653:
		// NFS, SMB, CIFS, SMB2, 9p, FUSE, Ceph, AFS, Coda, NCP, OCFS2,
		// GFS2, Lustre, GPFS: changes made by other machines (or behind
		// the FUSE daemon) raise no event here.
		return fmt.Sprintf("a network or FUSE file system (type %#x)", uint32(st.Type))
	}
	return ""
}

// watchBudget is a quarter of the inotify watches the user has left: the
// user's editor and other tools share the per-user limit. Every other
// yolop process of the user is sealed (spawn.Seal), so that without
// root its watches cannot be counted: each one found adds one share to
// the division, and the user's yolop processes together never take all
// that is left (n of them at most n/(n+3) of it).
func watchBudget() (int, error) {
	max, err := maxUserWatches()
	if err != nil {
		return 0, err
	}
	used, hidden := watchesInUse(os.DirFS("/proc"), os.Getuid())
	return (max - used) / (4 + hidden), nil
}

// maxUserWatches is the kernel's limit of inotify watches per user.
func maxUserWatches() (int, error) {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// watchesInUse counts the inotify watches held by the processes whose
// descriptors proc (the /proc file system) shows: the limit is per user,
// and other users' processes, unreadable, do not count against it.
// hidden counts the yolop processes of user uid whose descriptors it does
// not show (sealed: their /proc files belong to root).
func watchesInUse(proc fs.FS, uid int) (used, hidden int) {
	procs, err := fs.ReadDir(proc, ".")
	if err != nil {
		return 0, 0
	}
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		fdDir := p.Name() + "/fd"
		fds, err := fs.ReadDir(proc, fdDir)
		if errors.Is(err, fs.ErrPermission) {
			if isYolop(proc, p.Name()) && procUID(proc, p.Name()) == uid {
				hidden++
			}
			continue
		}
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := fs.ReadLink(proc, fdDir+"/"+fd.Name()); err != nil || l != "anon_inode:inotify" {
				continue
			}
			info, err := fs.ReadFile(proc, p.Name()+"/fdinfo/"+fd.Name())
			if err != nil {
				continue
			}
			used += bytes.Count(info, []byte("inotify wd:"))
		}
	}
	return used, hidden
}

// procUID is the real user id of process pid (-1 when unknown), from its
// status, which a sealed process shows to every user.
func procUID(proc fs.FS, pid string) int {
	b, err := fs.ReadFile(proc, pid+"/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "Uid:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				if n, err := strconv.Atoi(f[0]); err == nil {
					return n
				}
			}
		}
	}
	return -1
}

// isYolop reports whether process pid runs as yolop (the name it was
// started by, from its command line, which every user may read).
func isYolop(proc fs.FS, pid string) bool {
	b, err := fs.ReadFile(proc, pid+"/cmdline")
	if err != nil {
		return false
	}
	argv0, _, _ := bytes.Cut(b, []byte{0})
	return filepath.Base(string(argv0)) == "yolop"
}

// openWatcher opens an inotify instance over root, with no watches yet,
// and starts reading its events; budget is WatchOptions.Budget's (0: a
// quarter of the user's free watches, as count gives them; nil counts
// them in /proc).
func openWatcher(root string, budget int, count func() (int, error), provisional int) (*watcher, error) {
	if why := watchable(root); why != "" {
		return nil, errors.New(why)
	}
	if budget < 0 {
		return nil, errors.New("the watch budget allows none")
	}
	if budget == 1 {
		return nil, errNoWatchesLeft
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &watcher{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, root: root, budget: budget, budgetKnown: make(chan struct{}), done: make(chan struct{})}
	if budget > 0 {
		close(w.budgetKnown)
	} else {
		// Counting the watches the user's processes hold reads every
		// one's descriptors in /proc: milliseconds, more on a desktop
		// with many processes. It runs beside what comes before the
		// first watch is added, which waits for it (limit).
		if count == nil {
			count = watchBudget
		}
		w.provisional = provisional
		if max, err := maxUserWatches(); err == nil && provisional == 0 && max >= 1<<16 {
			// Where the limit is small (8,192 on older kernels) an
			// editor may hold most of it: the walk waits for the count.
			w.provisional = max / 8
		}
		go func() {
			defer close(w.budgetKnown)
			b, err := count()
			switch {
			case err != nil:
				w.budgetWhy = "cannot read the inotify watch limit: " + err.Error()
			case b < 2:
				w.budgetWhy = errNoWatchesLeft.Error()
			}
			w.budget = b
		}()
	}
	w.cond = sync.NewCond(&w.mu)
	w.reset()
	go w.read()
	return w, nil
}

var errNoWatchesLeft = errors.New("no inotify watches left for this user")

// limit is the watcher's budget, once known; why says why it allows no
// watch at all ("" when it allows some).
func (w *watcher) limit() (budget int, why string) {
	<-w.budgetKnown
	return w.budget, w.budgetWhy
}

// limitNow is the budget if known, else the provisional one (known false).
func (w *watcher) limitNow() (budget int, why string, known bool) {
	select {
	case <-w.budgetKnown:
		return w.budget, w.budgetWhy, true
	default:
		return w.provisional, "", false
	}
}

// budgeted reports whether the watcher may hold watches; when it may
// not, it stops for good, with the reason. The caller holds w.mu.
func (w *watcher) budgeted() bool {
	if _, why := w.limit(); why != "" {
		if w.dead == "" {
			w.dead = why
		}
		return false
	}
	return true
}

// startWatcher opens an inotify instance over root and arms it in the
// background, or with byWalk lets the next capture's walk arm it; until it
// is armed every capture walks.
func startWatcher(root, markDir string, budget int, byWalk bool, count func() (int, error), provisional int) (*watcher, error) {
	w, err := openWatcher(root, budget, count, provisional)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(markDir, 0o700); err != nil {
		w.close()
		return nil, err
	}
	w.mu.Lock()
	w.markDir, w.full = markDir, "the watcher is not armed yet"
	if byWalk {
		w.byWalk, w.full = true, ""
	}
	w.mu.Unlock()
	if byWalk {
		return w, nil
	}
	w.arming.Store(true)
	go func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		// Cleared before the lock is given back: whoever waitArmed
		// wakes takes the change set (a capture seeing arming still
		// set would walk without taking it, and so would the next).
		defer w.arming.Store(false)
		w.arm()
	}()
	return w, nil
}

func (w *watcher) reset() {
	w.wds, w.dirs = map[int32]string{}, map[string]int32{}
	w.dirty, w.gone, w.detached = map[string]bool{}, map[string]bool{}, map[uint32]string{}
}

// arm (re)builds every watch from scratch: the marker directory, then the
// worktree's directories. The caller holds w.mu. Events of the old watches
// still queued carry descriptors no longer known, and are dropped: the
// walk that follows an arm covers them.
func (w *watcher) arm() {
	if w.closed || w.dead != "" {
		return
	}
	if !w.budgeted() {
		w.cond.Broadcast()
		return
	}
	for wd := range w.wds {
		_, _ = unix.InotifyRmWatch(w.fd, uint32(wd)) // gone already: nothing to remove
	}
	if w.markWD > 0 {
		_, _ = unix.InotifyRmWatch(w.fd, uint32(w.markWD))
	}
	w.reset()
	wd, err := unix.InotifyAddWatch(w.fd, w.markDir, unix.IN_CREATE|unix.IN_ONLYDIR)
	if err != nil {
		w.dead = "cannot watch the barrier directory: " + err.Error()
		return
	}
	w.markWD = int32(wd)
	w.rearm = false
	if !w.addTree("", false) {
		if w.full == "" || w.full == "the watcher is not armed yet" {
			w.full = "a directory could not be watched"
		}
		w.rearm = true
		if budget, _ := w.limit(); len(w.wds) >= budget {
			// More directories than the budget allows: stop for good.
			w.dead = fmt.Sprintf("the worktree has more directories than the %d inotify watches yolop allows itself", budget)
			for wd := range w.wds {
				_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
			}
			w.reset()
		}
		w.cond.Broadcast()
		return
	}
	w.armed = true
	w.setFull("the watcher was just armed")
	w.cond.Broadcast()
}

// addTree watches the directory rel and everything below it, skipping the
// write blocklist and the inside of nested repositories (their top
// directory is watched, so that its .git going away is seen). With scan,
// every non-directory entry found is recorded as changed: it may have been
// created before its directory's watch was in place. It reports false when
// a watch could not be added (budget, kernel limit, unreadable directory).
func (w *watcher) addTree(rel string, scan bool) bool {
	if w.closed {
		return false
	}
	abs := w.root
	if rel != "" {
		abs = filepath.Join(w.root, filepath.FromSlash(rel))
	}
	if budget, _ := w.limit(); len(w.wds) >= budget {
		return false
	}
	wd, err := unix.InotifyAddWatch(w.fd, abs, watchMask)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return true // gone or replaced already: its parent reports that
		}
		return false
	}
	if old, ok := w.wds[int32(wd)]; ok && old != rel {
		// A directory moved inside the worktree keeps its descriptor.
		delete(w.dirs, old)
	}
	w.wds[int32(wd)] = rel
	w.dirs[rel] = int32(wd)
	// Only the names of directories (and, with scan, of everything) are
	// needed: at 100,000 files a sorted os.ReadDir with a path built for
	// every file spent nearly as long sorting and allocating as reading.
	var subdirs, files []string
	nested := false
	err = readNames(abs, func(name []byte, dir bool) {
		if rel != "" && string(name) == ".git" {
			nested = true
		}
		if dir || scan {
			n := string(name)
			if isBlocked(n) || strings.HasPrefix(n, tmpPrefix) {
				return
			}
			if dir {
				subdirs = append(subdirs, n)
			} else {
				files = append(files, n)
			}
		}
	})
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	if nested {
		if scan {
			// A repository arrived: the walk decides what a capture
			// leaves out.
			w.setFull("a nested repository appeared")
		}
		return true
	}
	join := func(name string) string {
		if rel == "" {
			return name
		}
		return rel + "/" + name
	}
	ok := true
	for _, n := range subdirs {
		if !w.addTree(join(n), scan) {
			ok = false
		}
	}
	for _, n := range files {
		w.mark(join(n))
	}
	return ok
}

// readNames calls fn with the name of each entry of the directory at abs
// (not . and ..) and whether it is a directory, as the directory lists
// them: no sort, and no allocation for a name fn does not keep.
func readNames(abs string, fn func(name []byte, dir bool)) error {
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	buf := direntBuf.Get().(*[]byte)
	defer direntBuf.Put(buf)
	for {
		n, err := unix.Getdents(fd, *buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		b := (*buf)[:n]
		for len(b) >= direntNameOff {
			reclen := int(*(*uint16)(unsafe.Pointer(&b[direntReclenOff])))
			if reclen < direntNameOff || reclen > len(b) {
				return errors.New("malformed directory entry")
			}
			typ := b[direntTypeOff]
			name := b[direntNameOff:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if len(name) == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			dir := typ == unix.DT_DIR
			if typ == unix.DT_UNKNOWN {
				// The file system does not say: ask.
				var st unix.Stat_t
				if err := unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
					dir = st.Mode&unix.S_IFMT == unix.S_IFDIR
				}
			}
			fn(name, dir)
		}
	}
}

// The layout of struct linux_dirent64.
const (
	direntReclenOff = int(unsafe.Offsetof(unix.Dirent{}.Reclen))
	direntTypeOff   = int(unsafe.Offsetof(unix.Dirent{}.Type))
	direntNameOff   = int(unsafe.Offsetof(unix.Dirent{}.Name))
)

var direntBuf = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (w *watcher) setFull(why string) {
	if w.full == "" {
		w.full = why
	}
}

func (w *watcher) mark(p string) {
	if len(w.dirty) >= watchMaxDirty {
		w.setFull(fmt.Sprintf("more than %d paths changed", watchMaxDirty))
		return
	}
	w.dirty[p] = true
}

// read consumes events until the instance is closed.
func (w *watcher) read() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			w.mu.Lock()
			if !w.closed {
				w.dead = "reading inotify events failed: " + err.Error()
			}
			w.cond.Broadcast()
			w.mu.Unlock()
			return
		}
		w.mu.Lock()
		if w.overflowHook {
			w.overflowHook = false
			w.overflow()
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := ""
			if ev.Len > 0 {
				b := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				if i := bytes.IndexByte(b, 0); i >= 0 {
					b = b[:i]
				}
				name = string(b)
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
			w.event(ev.Wd, ev.Mask, ev.Cookie, name)
		}
		w.cond.Broadcast()
		w.mu.Unlock()
	}
}

func (w *watcher) overflow() {
	w.setFull("the inotify queue overflowed")
	w.rearm = true
}

// event records one inotify event. The caller holds w.mu.
func (w *watcher) event(wd int32, mask, cookie uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.overflow()
		return
	}
	if wd == w.markWD {
		if s, ok := strings.CutPrefix(name, "m"); ok {
			if v, err := strconv.ParseUint(s, 10, 64); err == nil && v > w.seen {
				w.seen = v
			}
		}
		return
	}
	dir, known := w.wds[wd]
	if !known {
		return // a watch removed since (rearm): covered by the walk after it
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(w.wds, wd)
		if w.dirs[dir] == wd {
			delete(w.dirs, dir)
		}
		return
	}
	if dir == detachedDir {
		return // moved away: read again wherever it arrives
	}
	if mask&unix.IN_UNMOUNT != 0 {
		w.setFull("a file system was unmounted in the worktree")
		w.rearm = true
		return
	}
	if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
		if dir == "" {
			w.dead = "the worktree directory was moved or deleted"
		}
		return // the parent's watch reports the entry itself
	}
	if name == "" {
		return
	}
	rel := name
	if dir != "" {
		rel = dir + "/" + name
	}
	if isBlocked(name) || strings.HasPrefix(name, tmpPrefix) {
		if strings.EqualFold(name, ".git") && dir != "" {
			w.setFull("a nested repository appeared or went away")
		}
		return
	}
	if name == ".gitignore" {
		w.setFull("an ignore file changed")
	}
	if mask&unix.IN_ISDIR == 0 {
		w.mark(rel)
		return
	}
	switch {
	case mask&unix.IN_MOVED_FROM != 0:
		w.gone[rel] = true
		w.detach(rel, cookie)
	case mask&unix.IN_DELETE != 0:
		w.gone[rel] = true
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		if mask&unix.IN_MOVED_TO != 0 {
			delete(w.detached, cookie)
			// Whatever was there before is replaced.
			w.gone[rel] = true
		}
		if !w.addTree(rel, true) {
			w.setFull("a directory could not be watched")
			w.rearm = true
		}
	}
}

// detach forgets the paths of the watches at and below rel (a directory
// moved away): their events are dropped until the directory arrives
// somewhere in the worktree (its watches are then found again, with their
// new paths, by addTree), and the watches are removed at the next barrier
// if it never does.
func (w *watcher) detach(rel string, cookie uint32) {
	for d, wd := range w.dirs {
		if d == rel || strings.HasPrefix(d, rel+"/") {
			delete(w.dirs, d)
			w.wds[wd] = detachedDir
		}
	}
	w.detached[cookie] = rel
}

// detachedDir stands for the path of a watched directory moved away.
const detachedDir = "\x00detached"

// changes is what the watcher vouches for since the last take.
type changes struct {
	paths []string // changed paths (not directories)
	gone  []string // directories removed with everything they held
	full  string   // non-empty: the capture must walk, for this reason
}

// take waits for every event up to now (the flush barrier: a marker
// created in the watched private directory comes back through the same
// queue after every earlier event), then hands over the change set and
// starts a new one. A change made after the barrier is recorded for the
// next take, even when this capture sees it too.
func (w *watcher) take(ctx context.Context) changes {
	if w.arming.Load() {
		return changes{full: "the watcher is not armed yet"}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead != "" {
		return changes{full: "no watcher: " + w.dead}
	}
	if !w.armed && !w.rearm {
		why := "the watcher is not armed yet"
		if w.unarmed != "" {
			why = "the watcher could not be armed: " + w.unarmed
		}
		return changes{full: why}
	}
	if why := w.barrier(ctx); why != "" {
		return w.fail(why)
	}
	// Directories moved away and never seen arriving: their watches
	// report paths outside the worktree.
	for cookie := range w.detached {
		for wd, d := range w.wds {
			if d == detachedDir {
				_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
				delete(w.wds, wd)
			}
		}
		delete(w.detached, cookie)
	}
	if w.rearm && w.byWalk {
		// The capture walks: its walk arms the watcher again.
		c := changes{full: w.full}
		if c.full == "" {
			c.full = "the watches must be rebuilt"
		}
		w.disarm()
		return c
	}
	if w.rearm {
		w.arm()
		if w.dead != "" {
			return changes{full: "no watcher: " + w.dead}
		}
	}
	c := changes{full: w.full}
	if c.full == "" {
		c.paths = make([]string, 0, len(w.dirty))
		for p := range w.dirty {
			c.paths = append(c.paths, p)
		}
		for d := range w.gone {
			c.gone = append(c.gone, d)
		}
	}
	w.dirty, w.gone, w.full = map[string]bool{}, map[string]bool{}, ""
	return c
}

// barrier waits for every event up to now: a marker created in the
// watched private directory comes back through the same queue after every
// earlier event. It returns why it failed ("": it came back). The caller
// holds w.mu.
func (w *watcher) barrier(ctx context.Context) string {
	w.seq++
	seq := w.seq
	marker := filepath.Join(w.markDir, "m"+strconv.FormatUint(seq, 10))
	f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "cannot write the barrier marker: " + err.Error()
	}
	f.Close()
	if err := os.Remove(marker); err != nil {
		return "cannot remove the barrier marker: " + err.Error()
	}
	deadline := time.Now().Add(barrierTimeout)
	stop := context.AfterFunc(ctx, func() { w.mu.Lock(); w.cond.Broadcast(); w.mu.Unlock() })
	defer stop()
	timer := time.AfterFunc(barrierTimeout, func() { w.mu.Lock(); w.cond.Broadcast(); w.mu.Unlock() })
	defer timer.Stop()
	for w.seen < seq && w.dead == "" && ctx.Err() == nil && time.Now().Before(deadline) {
		w.cond.Wait()
	}
	if w.seen < seq {
		return "the watcher's barrier did not come back"
	}
	return ""
}

// peek is take that hands nothing over: after the barrier, whether path
// may have changed since the last take (it, or a directory above it,
// changed or went away); the change set stays for the next take. ok is
// false when the watcher cannot vouch for what it saw (not armed, dead,
// overflowed, to be rebuilt, a failed barrier): the caller finds out by
// other means. The answer is a copy, good for as long as the caller
// needs it.
func (w *watcher) peek(ctx context.Context) (changed func(path string) bool, ok bool) {
	if w.arming.Load() {
		return nil, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead != "" || !w.armed || w.rearm || w.full != "" {
		return nil, false
	}
	if why := w.barrier(ctx); why != "" {
		// What came since the last take is unknown: the next take walks.
		w.fail(why)
		return nil, false
	}
	if w.dead != "" || w.rearm || w.full != "" {
		return nil, false
	}
	dirty := maps.Clone(w.dirty)
	gone := slices.Collect(maps.Keys(w.gone))
	return func(p string) bool { return dirty[p] || underAny(p, gone) }, true
}

// fail makes the next take walk as well and returns a walking change set.
func (w *watcher) fail(why string) changes {
	w.rearm = true
	w.dirty, w.gone = map[string]bool{}, map[string]bool{}
	w.full = ""
	return changes{full: why}
}

// invalidate makes the next take walk (a capture that used the change set
// failed, so what it took is lost).
func (w *watcher) invalidate(why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.setFull(why)
}

// forceOverflow makes the next batch of events count as a queue overflow
// (tests: the kernel's queue limit is system-wide).
func (w *watcher) forceOverflow() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.overflowHook = true
}

// state reports whether the watcher is armed, and why it stopped.
func (w *watcher) state() (armed bool, dead string, watches int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.armed && !w.rearm, w.dead, len(w.wds)
}

// waitArmed waits until the first set of watches is in place (tests,
// benchmarks).
func (w *watcher) waitArmed(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { w.mu.Lock(); w.cond.Broadcast(); w.mu.Unlock() })
	defer stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for !w.armed && w.dead == "" && ctx.Err() == nil {
		w.cond.Wait()
	}
	if w.dead != "" {
		return errors.New(w.dead)
	}
	return ctx.Err()
}

// release removes every watch now and leaves the instance open for close.
// Removing a watch only queues it for the kernel, which frees it after a
// grace period of its own (0.1-20 ms here, tens under load) in a worker
// thread; closing an instance waits for every queued watch to be freed.
// Removed early, they are freed while the process goes on, and the close
// that follows later waits for what is left of that, if anything (about
// half the time a whole grace period: closeHandedOff leaves that wait to
// another process). A close in the background instead would hold a thread
// of the Go runtime in that wait, and with it one of GOMAXPROCS: on two
// cores the goroutine feeding a git process its input then waited for the
// runtime to take the processor back (up to 10 ms, seen as a slow ref
// update at the end of a turn).
// Nothing is recorded any more: the watcher is dead.
func (w *watcher) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.dead == errReleased {
		return
	}
	for wd := range w.wds {
		_, _ = unix.InotifyRmWatch(w.fd, uint32(wd)) // one gone already: nothing to remove
	}
	if w.markWD > 0 {
		_, _ = unix.InotifyRmWatch(w.fd, uint32(w.markWD))
	}
	w.reset()
	w.markWD = 0
	w.dead = errReleased
	w.cond.Broadcast()
}

// errReleased is why a released watcher records nothing.
const errReleased = "the watcher was let go"

// closeHandedOff closes the instance as close does, after handing it to a
// short-lived process of its own first, so that the kernel's teardown
// waits there rather than here (see holdInstance). Without that process
// it is close.
func (w *watcher) closeHandedOff() {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return // its descriptor's number may be another file's by now
	}
	pid, done := holdInstance(w.fd)
	w.close()
	if onHeld != nil && pid != 0 {
		onHeld(pid)
	}
	done()
}

// onHeld, when set, runs after a handed-off watcher's own close, before
// its holder is told to end (tests).
var onHeld func(pid int)

func (w *watcher) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	w.f.Close()
	<-w.done
}

// # Armed by the walk
//
// A process that lives for one turn (print mode) has no time to arm in
// the background before its first capture and walk again at its second:
// with WatchOptions.ArmWithWalk the watcher holds no watches until a
// capture walks, and that capture's own walk (walkTree) adds each
// directory's watch before reading it. What changes in a directory after
// its watch is in place raises an event. What changed after the capture
// began but before the watch was added (the capture's status, which runs
// beside the walk, may have looked first) is found by the walk itself: it
// reads each directory and stats each file after the watch, and an inode
// changed (ctime, which no user can set) since the capture began, less
// the clock's slack, counts as changed; a directory so changed counts as
// replaced, so everything at and under it, as the previous tree and the
// disk have it, is looked at by the next capture. A .gitignore, a nested
// repository or the worktree's top directory changed that way, a
// directory that cannot be watched or read, and the budget reached leave
// the next capture walking (the budget for good), as with the background
// arm. So the capture after the walking one is watched.

// walkArm is the arming of a watcher by one walk.
type walkArm struct {
	w     *watcher
	since int64 // Unix ns: an inode changed at or after this may postdate what the capture saw

	onEnter func(rel string) // tests: runs before each directory is watched
	// topAhead: the top directory was watched before the proof the walk
	// runs beside began (newPrewatchByWalk), so a change of its entries
	// since raised an event, and its inode time says nothing more.
	topAhead bool

	mu         sync.Mutex
	failed     string // why the walk could not arm the watcher
	overBudget bool
}

// armSlack is how far before the capture's start a change may be stamped
// (the kernel stamps inodes from a clock updated every tick); files
// systems with whole-second (or coarser) times get armSlackCoarse.
const (
	armSlack       = 100 * time.Millisecond
	armSlackCoarse = 2 * time.Second
)

// walkArm returns the arming of the watcher by a walk that begins now for
// a capture that began at start, or nil when the watcher is armed, dead,
// or arms in the background.
func (w *watcher) walkArm(start time.Time) *walkArm {
	if w.provisional == 0 {
		w.limit() // known before the lock is taken: events wait for the lock
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.byWalk || w.armed || w.dead != "" || w.closed {
		return nil
	}
	// The count of the user's watches may still run: the walk watches
	// up to the provisional budget meanwhile.
	if _, why, known := w.limitNow(); known && why != "" {
		w.dead = why
		return nil
	}
	// What an earlier walk that could not arm left is dropped: this one
	// looks again.
	w.disarm()
	if w.markWD <= 0 && w.markDir != "" { // a prewatch has none until adopted
		wd, err := unix.InotifyAddWatch(w.fd, w.markDir, unix.IN_CREATE|unix.IN_ONLYDIR)
		if err != nil {
			w.dead = "cannot watch the barrier directory: " + err.Error()
			return nil
		}
		w.markWD = int32(wd)
	}
	slack := armSlack
	var st unix.Stat_t
	if err := unix.Stat(w.root, &st); err != nil || st.Ctim.Nsec == 0 {
		// Whole-second inode times (or none to tell by).
		slack = armSlackCoarse
	}
	return &walkArm{w: w, since: start.Add(-slack).UnixNano()}
}

// disarm removes every worktree watch; the next walk arms again. The
// caller holds w.mu.
func (w *watcher) disarm() {
	for wd := range w.wds {
		_, _ = unix.InotifyRmWatch(w.fd, uint32(wd)) // gone already: nothing to remove
	}
	w.reset()
	w.armed, w.rearm, w.full = false, false, ""
}

func (a *walkArm) fail(why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed == "" {
		a.failed = why
	}
}

func (a *walkArm) stopped() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failed != ""
}

// enter watches the directory rel (at abs) before the walk reads it.
func (a *walkArm) enter(rel, abs string) {
	if a.onEnter != nil {
		a.onEnter(rel)
	}
	if a.stopped() {
		return
	}
	w := a.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.dead != "" {
		a.fail("the watcher stopped")
		return
	}
	budget, _, known := w.limitNow()
	if !known && len(w.wds) >= budget {
		budget, _ = w.limit() // past the provisional budget: the count decides
	}
	if len(w.wds) >= budget {
		a.mu.Lock()
		a.overBudget = true
		a.mu.Unlock()
		a.fail(fmt.Sprintf("the worktree has more directories than the %d inotify watches yolop allows itself", budget))
		return
	}
	wd, err := unix.InotifyAddWatch(w.fd, abs, watchMask)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return // gone or replaced already: its parent says so
		}
		a.fail(fmt.Sprintf("cannot watch %q: %v", rel, err))
		return
	}
	if old, ok := w.wds[int32(wd)]; ok && old != rel {
		// A directory moved inside the worktree keeps its descriptor.
		delete(w.dirs, old)
	}
	w.wds[int32(wd)] = rel
	w.dirs[rel] = int32(wd)
}

// recent reports whether an inode changed at ctime (Unix ns) may have
// changed after the capture looked at it.
func (a *walkArm) recent(ctime int64) bool { return ctime >= a.since }

// watchedAhead reports whether the directory rel was watched before what
// the walk runs beside began.
func (a *walkArm) watchedAhead(rel string) bool { return rel == "" && a.topAhead }

// changed records the path rel as changed.
func (a *walkArm) changed(rel string) {
	a.w.mu.Lock()
	defer a.w.mu.Unlock()
	a.w.mark(rel)
}

// replaced records the directory rel as replaced: what it held, before
// and now, is looked at.
func (a *walkArm) replaced(rel string) {
	a.w.mu.Lock()
	defer a.w.mu.Unlock()
	if rel == "" {
		a.w.setFull("the worktree's top directory changed as the capture began")
		return
	}
	a.w.gone[rel] = true
}

// walkNext makes the next capture walk.
func (a *walkArm) walkNext(why string) {
	a.w.mu.Lock()
	defer a.w.mu.Unlock()
	a.w.setFull(why)
}

// finish arms the watcher when the walk could watch every directory; the
// change set gathered since is the next capture's.
func (a *walkArm) finish() {
	w := a.w
	// Known before the lock is taken (events wait for the lock): the
	// walk may have watched on the provisional budget.
	budget, why := w.limit()
	w.mu.Lock()
	defer w.mu.Unlock()
	defer w.cond.Broadcast()
	if w.closed || w.dead != "" {
		return
	}
	a.mu.Lock()
	failed, over := a.failed, a.overBudget
	a.mu.Unlock()
	switch {
	case why != "":
		failed, over = why, true
	case len(w.wds) > budget:
		failed, over = fmt.Sprintf("the worktree has more directories than the %d inotify watches yolop allows itself", budget), true
	}
	if failed != "" {
		w.disarm()
		w.unarmed = failed
		if over {
			// More directories than the budget allows: stop for good.
			w.dead = failed
		}
		return
	}
	w.armed, w.unarmed = true, ""
}

// # Armed before a proof
//
// A claimed spare is proved clean by a status (the claim's) and its first
// capture is derived from that proof, without a walk that could arm the
// watcher; the capture at the end of the turn would walk. NewPrewatch arms
// a watcher over the worktree before the proof begins: every change made
// after a directory's watch is in place raises an event, and every file
// the proof found equal to its entry was looked at after its directory's
// watch was added. So the derived capture takes nothing from the watcher,
// and the next one looks at what changed since the watcher was armed (the
// claim's two-tree checkout included).

func newPrewatch(root string, budget int) (*watcher, error) {
	w, err := openWatcher(root, budget, nil, 0)
	if err != nil {
		return nil, err
	}
	budget, why := w.limit()
	if why != "" {
		w.close()
		return nil, errors.New(why)
	}
	w.mu.Lock()
	w.byWalk = true
	ok := w.addTree("", false)
	over := len(w.wds) >= budget
	w.armed = ok
	w.mu.Unlock()
	if !ok {
		w.close()
		if over {
			return nil, fmt.Errorf("the worktree has more directories than the %d inotify watches yolop allows itself", budget)
		}
		return nil, errors.New("a directory could not be watched")
	}
	return w, nil
}

// newPrewatchByWalk is newPrewatch armed by one walk of the tree instead
// (walkTree with a walkArm), whose findings it returns as well. The top
// directory is watched first, and began called: the proof may begin
// then, beside the walk, which records as changed every inode changed
// since (less the clock's slack). The top directory's own inode time is
// not asked (a claim has just renamed it into place): its entries'
// changes since raised events. w is nil (and the walk a plain one) when
// there can be no watcher or it could not be armed; began is called in
// every case.
func newPrewatchByWalk(root string, budget int, began func()) (*watcher, walkResult) {
	once := sync.OnceFunc(began)
	defer once()
	w, err := openWatcher(root, budget, nil, 0)
	if err != nil {
		once()
		return nil, walkTree(root, nil, false)
	}
	w.mu.Lock()
	w.byWalk = true
	w.mu.Unlock()
	arm := w.walkArm(time.Now())
	if arm == nil {
		w.close()
		once()
		return nil, walkTree(root, nil, false)
	}
	arm.enter("", root)
	arm.topAhead = !arm.stopped()
	once()
	res := walkTree(root, arm, false)
	arm.finish()
	if armed, _, _ := w.state(); !armed {
		w.close()
		return nil, res
	}
	return w, res
}

// adopt makes the prewatch an engine's watcher: its barrier markers go to
// markDir, and byWalk is the engine's WatchOptions.ArmWithWalk (how it
// arms again after an overflow).
func (w *watcher) adopt(markDir string, byWalk bool) error {
	if err := os.MkdirAll(markDir, 0o700); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.dead != "" {
		return errors.New("the watcher stopped: " + w.dead)
	}
	wd, err := unix.InotifyAddWatch(w.fd, markDir, unix.IN_CREATE|unix.IN_ONLYDIR)
	if err != nil {
		return fmt.Errorf("cannot watch the barrier directory: %w", err)
	}
	w.markDir, w.markWD, w.byWalk = markDir, int32(wd), byWalk
	return nil
}

// holderPaths are where a holder process (holdInstance) is looked for:
// cat, which keeps what it inherits open until its input ends.
var holderPaths = []string{"/bin/cat", "/usr/bin/cat"}

// holderPath is the first of holderPaths that is an executable file ("":
// none).
func holderPath() string {
	for _, p := range holderPaths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// holdInstance starts a process that inherits the inotify instance fd
// (whose watches are all removed) and lives until done is called. Closing
// the last descriptor of an instance waits for the kernel to free the
// watches removed from it: a grace period of 10-15 ms in about half the
// closes here, whatever the number of watches. With the holder's, this
// process's close is not the last one, and the holder's exit waits
// instead, off any caller's path. done ends the holder (its input ends)
// without waiting for it; it is reaped in the background, or, when this
// process exits first (a print-mode process does, by the grace period),
// by whoever reaps orphans (init, a subreaper), as a git gc that detached
// is. When no holder can be started, pid is 0, done does nothing and the
// close waits as before.
//
// The holder gets its input, /dev/null as its output and the instance,
// and nothing else: descriptors this process inherited without
// close-on-exec (a caller's pipe, a jobserver, a lock) are closed in it,
// or their readers would wait for its end too. The descriptors are handed
// over as numbers (syscall.ForkExec): an *os.File handed to
// os.StartProcess is switched to blocking mode, and so would be the
// watcher's own descriptor, which shares that mode.
func holdInstance(fd int) (pid int, done func()) {
	none := func() {}
	path := holderPath()
	if path == "" {
		return 0, none
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return 0, none
	}
	null, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return 0, none
	}
	files := []uintptr{uintptr(p[0]), uintptr(null), uintptr(null), uintptr(fd)}
	for _, n := range inheritedFDs() {
		if n < len(files) {
			continue
		}
		for len(files) <= n {
			files = append(files, ^uintptr(0)) // closed in the child
		}
	}
	pid, err = syscall.ForkExec(path, []string{"cat"}, &syscall.ProcAttr{Dir: "/", Env: []string{}, Files: files})
	unix.Close(p[0])
	unix.Close(null)
	if err != nil {
		unix.Close(p[1])
		return 0, none
	}
	var once sync.Once
	return pid, func() {
		once.Do(func() {
			unix.Close(p[1]) // end of input: the holder exits, and its exit frees the instance
			go reapLater(pid)
		})
	}
}

// inheritedFDs lists this process's descriptors that a child would
// inherit (no close-on-exec).
func inheritedFDs() []int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	var fds []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if fl, err := unix.FcntlInt(uintptr(n), unix.F_GETFD, 0); err == nil && fl&unix.FD_CLOEXEC == 0 {
			fds = append(fds, n)
		}
	}
	return fds
}

// reapLater waits for the holder pid to end, looking every few
// milliseconds rather than blocking a thread of the runtime in wait4 for
// the kernel's grace period.
func reapLater(pid int) {
	var ws syscall.WaitStatus
	for i := 0; i < 1000; i++ {
		time.Sleep(10 * time.Millisecond)
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if got == pid || (err != nil && err != syscall.EINTR) {
			return
		}
	}
	for {
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
			return
		}
	}
}
