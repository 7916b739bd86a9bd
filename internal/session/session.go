package session

import (
	"bytes"
	"cmp"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/secret"
	"github.com/yolop-dev/yolop/internal/session/jsonl"
)

// File names inside a session directory.
const (
	EventsFile      = "events.jsonl"
	WorkspaceFile   = "workspace.json"
	TimelineFile    = "timeline.jsonl"
	CompactionsFile = "compaction-checkpoints.jsonl"
)

// Format versions written by this package.
const (
	EventVersion     = 1
	WorkspaceVersion = 1
)

// Session kinds.
const (
	KindWorktree     = "worktree"     // the session owns a git worktree; workspace snapshots are available
	KindConversation = "conversation" // no owned worktree; checkpoints are conversation-only
	// KindInPlace: the session works in the user's own checkout
	// (RepoRoot); snapshots are taken there with a private index, and
	// restores undo the agent's turns path by path, never the user's
	// edits.
	KindInPlace = "in-place"
)

// Mode is the workspace mode of a session kind, as JSON and listings show
// it: worktree, in-place or none.
func Mode(kind string) string {
	switch kind {
	case KindWorktree:
		return "worktree"
	case KindInPlace:
		return "in-place"
	}
	return "none"
}

var (
	// ErrLocked is wrapped by *LockedError.
	ErrLocked = fault.New(fault.Locked, "session: locked")
	// ErrNotFound is returned by Open and OpenReadOnly for an unknown id.
	ErrNotFound = fault.New(fault.UnknownSession, "session: not found")
	// ErrCorrupt is wrapped by *CorruptError.
	ErrCorrupt = jsonl.ErrCorrupt
	// ErrReadOnly is wrapped by every refused write on a read-only session.
	ErrReadOnly = fault.Plain("session: read-only")
	// ErrNotWritable is wrapped by Open when the session directory cannot
	// be written at all (a read-only file system, or no permission), so
	// that a caller that only reads can fall back to OpenReadOnly.
	ErrNotWritable = fault.Plain("session: directory not writable")
)

// CorruptError locates a record or file that cannot be trusted.
type CorruptError = jsonl.CorruptError

// Worktree is the session-owned git worktree.
type Worktree struct {
	Path   string `json:"path"`
	Branch string `json:"branch"`
	Base   string `json:"base"` // commit the branch started from
	// GitDir is the worktree's administrative directory in the repository
	// (<common-dir>/worktrees/<id>), recorded when the worktree was made or
	// claimed: every git process yolop runs for the session is pinned to
	// it and to the common dir, never led by the worktree's .git link. ""
	// in sessions made before it was recorded (found from the
	// repository's records at the next open, then recorded).
	GitDir string `json:"git_dir,omitempty"`
	// Seal is what the worktree's config.worktree and info/sparse-checkout
	// held then (nil: not recorded yet).
	Seal *Seal `json:"seal,omitempty"`
}

// Seal is the sha256 of a worktree's config.worktree and
// info/sparse-checkout when recorded, "" for a file that did not exist
// (the same fields as git.Seal).
type Seal struct {
	ConfigWorktree string `json:"config_worktree"`
	SparseCheckout string `json:"sparse_checkout"`
}

// Workspace is workspace.json: what the session works on.
type Workspace struct {
	Version    int    `json:"version"`
	SessionID  string `json:"session_id"`
	Kind       string `json:"kind"` // KindWorktree or KindConversation
	RepoRoot   string `json:"repo_root,omitempty"`
	ActiveRoot string `json:"active_root"`
	CommonDir  string `json:"common_dir,omitempty"`
	// Folder: an in-place session in a folder outside git; CommonDir is
	// then the folder's private repository in the data directory (its git
	// dir, the folder its work tree), and the folder has no .git.
	Folder   bool      `json:"folder,omitempty"`
	Worktree *Worktree `json:"worktree,omitempty"`
	// Recycled: the worktree was a parked spare of an earlier session (or
	// prepared ahead), moved to the starting commit, not a fresh checkout.
	Recycled          bool      `json:"recycled,omitempty"`
	NoWorkspaceReason string    `json:"no_workspace_reason,omitempty"`
	Title             string    `json:"title,omitempty"`
	Provider          string    `json:"provider,omitempty"`
	Model             string    `json:"model,omitempty"`
	Created           time.Time `json:"created"`
	Updated           time.Time `json:"updated"`
}

// Event is one line of events.jsonl.
type Event struct {
	V    int       `json:"v"`
	Seq  int64     `json:"seq"`
	Type string    `json:"type"`
	Time time.Time `json:"ts"`
	// Turn is the checkpoint id of the turn the event belongs to; events
	// written between turns carry the head at the time ("" at the root).
	Turn string          `json:"turn,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Session is an open session directory. Its methods are safe for
// concurrent use.
type Session struct {
	ID  string
	Dir string

	mu sync.Mutex // guards the fields below
	ws Workspace
	// events is append-only: Events hands out clones of the slice header,
	// and elements are never modified after they are appended.
	events []Event
	// base is the seq of the last event of a prefix of events.jsonl that
	// was not loaded at open (a verified Prefix said it had been parsed
	// before; events then starts at base+1), baseOff its length in bytes.
	// Both are 0 once every event is loaded (loadPrefixLocked).
	base    int64
	baseOff int64
	// skipped is the base OpenAt started from (0 when it read every
	// event); it never changes.
	skipped  int64
	log      *jsonl.File // nil for OpenReadOnly
	lock     *os.File    // nil for OpenReadOnly
	repaired []string
	corrupt  *CorruptError
	readOnly string // why writes are refused; "" when writable
	closed   bool
	// wsMu orders the writers of workspace.json (saveWorkspace, Close);
	// it is taken before mu, never while holding it.
	wsMu sync.Mutex
	// durable is closed once a session made by Start is on disk
	// (Durable), with durableErr set before; nil for an opened one.
	durable    chan struct{}
	durableErr error
}

// NewID returns a new session id: "s_" plus a lowercase ULID. Ids sort by
// creation time (lowercasing keeps Crockford base32 order), and every id
// this process makes sorts after the one before it, from any goroutine.
func NewID() string {
	return "s_" + strings.ToLower(idGen.next(time.Now()).String())
}

// idGen is the process-wide id source. ulid.Make keeps a pool of
// monotonic readers, one per pooled item, so two ids made in the same
// millisecond from different goroutines (or after the pool dropped an
// item) can sort backwards; one reader under one mutex cannot.
var idGen = &ulidGen{entropy: ulid.Monotonic(crand.Reader, 0)}

type ulidGen struct {
	mu      sync.Mutex // guards entropy and lastMS
	entropy *ulid.MonotonicEntropy
	lastMS  uint64
}

// next returns a ULID greater than every one it returned before. The
// timestamp never moves backwards, even when the wall clock does: a clock
// step back keeps the last millisecond and lets the monotonic entropy grow.
// When that millisecond's entropy is exhausted (2^80 ids, or a random start
// close to the top), the id moves to the next millisecond.
func (g *ulidGen) next(now time.Time) ulid.ULID {
	g.mu.Lock()
	defer g.mu.Unlock()
	ms := ulid.Timestamp(now)
	if ms < g.lastMS {
		ms = g.lastMS
	}
	for {
		id, err := ulid.New(ms, g.entropy)
		if err == nil {
			g.lastMS = ms
			return id
		}
		if !errors.Is(err, ulid.ErrMonotonicOverflow) {
			// crypto/rand does not fail on supported systems; if it
			// does, no id can be trusted to be unique.
			panic(fmt.Sprintf("session: new id: %v", err))
		}
		ms++
	}
}

// SessionsDir is <dataDir>/sessions.
func SessionsDir(dataDir string) string { return filepath.Join(dataDir, "sessions") }

func dirJoin(dir, name string) string { return filepath.Join(dir, name) }

// checkID refuses ids that could escape the sessions directory.
// CheckID reports whether id can name a session (it says why not).
func CheckID(id string) error { return checkID(id) }

func checkID(id string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("invalid session id %q: expected something like s_01jf…", id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("invalid session id %q: only letters, digits, '_' and '-' are allowed", id)
		}
	}
	return nil
}

func checkWorkspace(ws Workspace) error {
	switch ws.Kind {
	case KindWorktree:
		if ws.Worktree == nil || ws.Worktree.Path == "" {
			return fmt.Errorf("workspace of kind %q needs a worktree path", ws.Kind)
		}
	case KindInPlace:
		if ws.RepoRoot == "" {
			return fmt.Errorf("workspace of kind %q needs the checkout it works in (repo_root)", ws.Kind)
		}
	case KindConversation:
	default:
		return fmt.Errorf("workspace kind %q: want %q, %q or %q", ws.Kind, KindWorktree, KindInPlace, KindConversation)
	}
	return nil
}

// Create makes <dataDir>/sessions/<id>/ (0700) with workspace.json and an
// empty events.jsonl, and returns it locked and on disk. The id is
// ws.SessionID, or a new one when empty. Created/Updated default to now.
// On failure nothing is left behind.
func Create(dataDir string, ws Workspace) (*Session, error) {
	s, err := Start(dataDir, ws)
	if err != nil {
		return nil, err
	}
	if err := s.Durable(); err != nil {
		dir := s.Dir
		s.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Start is Create returning before the session is on disk, so that a
// turn's first capture need not wait for the fsyncs (the first one a
// process makes also waits for whatever else the file system has to
// write). Its directory, lock and empty logs exist when it returns;
// workspace.json, the mark of a complete session, is written (content
// synced, then its name) and the directory made durable in the
// background. Until Durable returns nil, other processes see an
// incomplete session, a crash may leave one, and nothing outside the
// directory may name it (a snapshot ref: snapshot.Options.BeforeRef).
// Writes of the workspace and Close wait for it.
func Start(dataDir string, ws Workspace) (*Session, error) {
	if ws.SessionID == "" {
		ws.SessionID = NewID()
	}
	if err := checkID(ws.SessionID); err != nil {
		return nil, err
	}
	if err := checkWorkspace(ws); err != nil {
		return nil, fmt.Errorf("create session %s: %w", ws.SessionID, err)
	}
	now := time.Now().UTC()
	if ws.Created.IsZero() {
		ws.Created = now
	}
	if ws.Updated.IsZero() {
		ws.Updated = ws.Created
	}
	ws.Version = WorkspaceVersion
	b, err := json.MarshalIndent(ws, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("create session %s: encode workspace: %w", ws.SessionID, err)
	}

	parent := SessionsDir(dataDir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("create sessions directory: %w", err)
	}
	if err := os.Chmod(parent, 0o700); err != nil {
		return nil, fmt.Errorf("set permissions of %s: %w", parent, err)
	}
	dir := filepath.Join(parent, ws.SessionID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("create session: %s already exists", dir)
		}
		return nil, fmt.Errorf("create session: %w", err)
	}
	s, err := create(dir, ws)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("create session %s: %w", ws.SessionID, err)
	}
	s.durable = make(chan struct{})
	go func() {
		defer close(s.durable)
		s.durableErr = finishCreate(dir, parent, append(b, '\n'))
	}()
	return s, nil
}

// finishCreate puts a new session on disk: the names of its lock and
// logs first, then workspace.json (content, then name), then the
// directory in the sessions directory.
func finishCreate(dir, parent string, workspace []byte) error {
	if err := jsonl.SyncDir(dir); err != nil {
		return err
	}
	if err := fsutil.ReplaceFile(dirJoin(dir, WorkspaceFile), workspace, 0o600); err != nil {
		return err
	}
	if err := jsonl.SyncDir(dir); err != nil {
		return err
	}
	return jsonl.SyncDir(parent)
}

// Durable waits until a session made by Start is on disk whatever
// happens next, and reports what kept it from getting there. A session
// that was opened, or made by Create, is durable already.
func (s *Session) Durable() error {
	if s.durable == nil {
		return nil
	}
	<-s.durable
	if s.durableErr != nil {
		return fmt.Errorf("session %s is not safely on disk: %w", s.ID, s.durableErr)
	}
	return nil
}

func create(dir string, ws Workspace) (*Session, error) {
	// umask may have narrowed or (rarely) widened the mode.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	lock, err := acquireLock(dir, ws.SessionID)
	if err != nil {
		return nil, err
	}
	// Its directory entry is made durable with workspace.json's; so are
	// those of the session's other logs, made empty here for whoever
	// opens them.
	log, err := jsonl.CreateFile(dirJoin(dir, EventsFile))
	if err != nil {
		releaseLock(lock)
		return nil, err
	}
	for _, name := range []string{TimelineFile, CompactionsFile} {
		f, err := os.OpenFile(dirJoin(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			log.Close()
			releaseLock(lock)
			return nil, err
		}
	}
	return &Session{ID: ws.SessionID, Dir: dir, ws: ws, log: log, lock: lock}, nil
}

func writeWorkspace(dir string, ws Workspace) error {
	b, err := json.MarshalIndent(ws, "", "  ")
	if err != nil {
		return fmt.Errorf("encode workspace: %w", err)
	}
	return jsonl.WriteFileAtomic(dirJoin(dir, WorkspaceFile), append(b, '\n'))
}

func readWorkspace(dir, id string) (Workspace, error) {
	var ws Workspace
	path := dirJoin(dir, WorkspaceFile)
	b, err := jsonl.ReadFile(path)
	if err != nil {
		return ws, err
	}
	return parseWorkspace(path, b, id)
}

// parseWorkspace decodes workspace.json for the session id. Whatever it
// returns without an error is usable as it is: a worktree session names its
// worktree path (nothing downstream has to guard against a missing one).
func parseWorkspace(path string, b []byte, id string) (Workspace, error) {
	var ws Workspace
	if err := json.Unmarshal(b, &ws); err != nil {
		return ws, &CorruptError{File: path, Line: 1, Offset: -1, Reason: "invalid JSON: " + err.Error()}
	}
	if ws.SessionID != id {
		return ws, &CorruptError{File: path, Line: 1, Offset: -1, Reason: fmt.Sprintf("session_id %q does not match the directory name %q", ws.SessionID, id)}
	}
	if ws.Version > WorkspaceVersion {
		return ws, &CorruptError{File: path, Line: 1, Offset: -1, Reason: fmt.Sprintf("version %d was written by a newer yolop; upgrade to open it", ws.Version)}
	}
	if err := checkWorkspace(ws); err != nil {
		return ws, &CorruptError{File: path, Line: 1, Offset: -1, Reason: err.Error()}
	}
	return ws, nil
}

// NotFoundError is an unknown session id; it matches ErrNotFound. Every
// command that takes an id says it in these words.
type NotFoundError struct {
	ID  string
	Dir string // the sessions directory searched
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no session %q in %s; `yolop sessions` lists them", e.ID, e.Dir)
}

// Is makes errors.Is(err, ErrNotFound) hold.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// FaultCode is ErrNotFound's, unknown_session.
func (e *NotFoundError) FaultCode() fault.Code { return ErrNotFound.FaultCode() }

func sessionDir(dataDir, id string) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	dir := filepath.Join(SessionsDir(dataDir), id)
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return "", &NotFoundError{ID: id, Dir: SessionsDir(dataDir)}
	}
	if err != nil {
		return "", fmt.Errorf("open session %s: %w", id, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("open session %s: %s is not a directory (%s)", id, dir, fi.Mode().Type())
	}
	return dir, nil
}

// Open opens an existing session for writing: it takes the lock (without
// blocking; a held lock gives a *LockedError and changes nothing),
// re-applies 0700/0600 to the directory and its entries, loads
// workspace.json and events.jsonl, and repairs a torn tail of events.jsonl
// (see Repaired). Mid-file corruption does not fail Open: the session is
// marked read-only (see ReadOnly) and Events holds the valid prefix.
func Open(dataDir, id string) (*Session, error) {
	return OpenAt(dataDir, id, nil)
}

// Prefix names the part of events.jsonl a caller has parsed before and
// derived its state from (see Session.Prefix): the file's mark there and
// the seq of its last event.
type Prefix struct {
	Mark    jsonl.Mark
	LastSeq int64
}

// OpenAt is Open for a caller that keeps state derived from a prefix of
// the event log: once the lock is held, known(dir) returns the prefix that
// state covers. When events.jsonl still starts with it (its mark checks),
// only the events after it are read and parsed at open; the prefix is
// loaded the first time Events or EventsAfter needs it. Otherwise (known
// returns false, the log was rewritten or truncated) the whole log is
// read, exactly like Open. A nil known is Open.
func OpenAt(dataDir, id string, known func(dir string) (Prefix, bool)) (*Session, error) {
	dir, err := sessionDir(dataDir, id)
	if err != nil {
		return nil, err
	}
	lock, err := acquireLock(dir, id)
	if err != nil {
		return nil, err
	}
	var pre *Prefix
	if known != nil {
		if p, ok := known(dir); ok && p.LastSeq > 0 && p.Mark.Offset > 0 {
			pre = &p
		}
	}
	s, err := open(dir, id, lock, pre)
	if err != nil {
		releaseLock(lock)
		return nil, fmt.Errorf("open session %s: %w", id, err)
	}
	return s, nil
}

// LockForRemoval takes a session's lock without reading it, for removing a
// session whose files are damaged. It returns the session directory and
// the function that releases the lock.
func LockForRemoval(dataDir, id string) (dir string, unlock func(), err error) {
	dir, err = sessionDir(dataDir, id)
	if err != nil {
		return "", nil, err
	}
	lock, err := acquireLock(dir, id)
	if err != nil {
		return "", nil, err
	}
	return dir, func() { releaseLock(lock) }, nil
}

func open(dir, id string, lock *os.File, pre *Prefix) (*Session, error) {
	if err := fixPerms(dir); err != nil {
		return nil, err
	}
	ws, err := readWorkspace(dir, id)
	if err != nil {
		return nil, err
	}
	var (
		log  *jsonl.File
		data []byte
		at   bool
	)
	if pre != nil {
		log, data, at, err = jsonl.OpenFileAt(dirJoin(dir, EventsFile), pre.Mark)
	} else {
		log, data, err = jsonl.OpenFile(dirJoin(dir, EventsFile), false)
	}
	if err != nil {
		return nil, err
	}
	s := &Session{ID: id, Dir: dir, ws: ws, log: log, lock: lock}
	var scan EventScan
	if at {
		s.base, s.baseOff, s.skipped = pre.LastSeq, pre.Mark.Offset, pre.LastSeq
		scan = parseEvents(EventsFile, data, s.baseOff, s.base)
	} else {
		scan = ParseEvents(EventsFile, data)
	}
	s.events = scan.Events
	if scan.Corrupt != nil {
		s.corrupt = scan.Corrupt
		s.readOnly = s.corruptReason()
		return s, nil
	}
	if scan.Tail > 0 {
		kept, err := log.TruncateTailAt(data, s.baseOff, scan.Valid)
		if err != nil {
			log.Close()
			return nil, err
		}
		s.repaired = append(s.repaired, fmt.Sprintf("%s: dropped a torn final record (%d bytes at byte %d; %s); the bytes are kept in %s",
			EventsFile, scan.Tail, s.baseOff+scan.Valid, scan.TailReason, filepath.Base(kept)))
	}
	return s, nil
}

// loadPrefixLocked loads the events OpenAt skipped. The prefix was parsed
// by an earlier process; should it no longer parse to the same events (the
// file was edited in place since), the session becomes read-only like any
// session whose committed prefix is damaged. s.mu must be held.
func (s *Session) loadPrefixLocked() {
	if s.base == 0 {
		return
	}
	base, baseOff := s.base, s.baseOff
	s.base, s.baseOff = 0, 0
	bad := func(reason string) {
		if s.corrupt == nil {
			s.corrupt = &CorruptError{File: EventsFile, Line: 1, Offset: -1, Reason: reason}
			s.readOnly = s.corruptReason()
		}
	}
	data, err := s.log.ReadPrefix(baseOff)
	if err != nil {
		bad(fmt.Sprintf("its first %d bytes could not be read again (%v)", baseOff, err))
		return
	}
	scan := ParseEvents(EventsFile, data)
	switch {
	case scan.Corrupt != nil:
		if s.corrupt == nil {
			c := *scan.Corrupt
			s.corrupt = &c
			s.readOnly = s.corruptReason()
		}
	case scan.Tail > 0 || len(scan.Events) == 0 || scan.Events[len(scan.Events)-1].Seq != base:
		bad(fmt.Sprintf("its first %d bytes no longer end with event %d; the file was changed in place", baseOff, base))
	}
	s.events = append(scan.Events, s.events...)
}

// EventsAfter returns the loaded events with a seq above seq, in order;
// the part of the prefix skipped at open that holds them is loaded first.
func (s *Session) EventsAfter(seq int64) []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq < s.base {
		s.loadAfterLocked(seq)
	}
	i, _ := slices.BinarySearchFunc(s.events, seq, func(ev Event, seq int64) int {
		return cmp.Compare(ev.Seq, seq+1)
	})
	return slices.Clone(s.events[i:])
}

// loadAfterLocked loads the skipped events from seq+1 (or a little
// before) up to the ones already loaded, without reading the prefix before
// them: the line where they start is found by bisecting the file on the
// seq each line begins with (events are one per line, in seq order, in the
// form Append writes). Anything unexpected loads the whole prefix instead.
// s.mu must be held.
func (s *Session) loadAfterLocked(seq int64) {
	off, ok := s.lineBefore(seq + 1)
	if !ok || off == 0 {
		s.loadPrefixLocked()
		return
	}
	data, err := s.log.ReadRange(off, s.baseOff)
	if err != nil {
		s.loadPrefixLocked()
		return
	}
	first, _, ok := lineSeq(data)
	if !ok || first > seq+1 {
		s.loadPrefixLocked()
		return
	}
	scan := parseEvents(EventsFile, data, off, first-1)
	if scan.Corrupt != nil || scan.Tail > 0 || len(scan.Events) == 0 || scan.Events[len(scan.Events)-1].Seq != s.base {
		s.loadPrefixLocked()
		return
	}
	s.events = append(scan.Events, s.events...)
	s.base, s.baseOff = first-1, off
}

// bisectWindow is the size of the range bisection stops at: loading a
// few more events is cheaper than more reads.
const bisectWindow = 64 << 10

// lineBefore returns the start of a line of the skipped prefix whose
// event's seq is at most want, as close before it as bisection finds
// cheaply (ok false when the file does not look as expected).
func (s *Session) lineBefore(want int64) (int64, bool) {
	lo, hi := int64(0), s.baseOff
	for hi-lo > bisectWindow {
		mid := lo + (hi-lo)/2
		start, seq, ok := s.nextLine(mid, hi)
		if !ok {
			return 0, false
		}
		if start < 0 {
			// No line starts in [mid, hi): the answer is below mid.
			hi = mid
			continue
		}
		if seq <= want {
			lo = start
		} else {
			hi = start
		}
	}
	return lo, true
}

// nextLine finds the first line that starts at or after from (and before
// end) and the seq its event begins with; start is -1 when none does.
func (s *Session) nextLine(from, end int64) (start, seq int64, ok bool) {
	buf := make([]byte, 4096)
	pos := from - 1 // a line starts after a newline
	if from == 0 {
		pos = -1
	}
	for {
		if pos+1 >= end {
			return -1, 0, true
		}
		if pos >= 0 {
			n, err := s.log.ReadAt(buf, pos)
			if n == 0 {
				return 0, 0, err == nil
			}
			i := bytes.IndexByte(buf[:n], '\n')
			if i < 0 {
				pos += int64(n)
				continue
			}
			pos += int64(i)
		}
		start = pos + 1
		if start >= end {
			return -1, 0, true
		}
		n, _ := s.log.ReadAt(buf[:64], start)
		sq, _, ok := lineSeq(buf[:n])
		return start, sq, ok
	}
}

// lineSeq reads the seq an event line begins with ({"v":1,"seq":N,…).
func lineSeq(line []byte) (seq int64, rest []byte, ok bool) {
	p, ok := cut(line, `{"v":`)
	if !ok {
		return 0, nil, false
	}
	if _, p, ok = jsonl.Digits(p); !ok {
		return 0, nil, false
	}
	if p, ok = cut(p, `,"seq":`); !ok {
		return 0, nil, false
	}
	return jsonl.Digits(p)
}

// Skipped is the seq of the last event OpenAt did not read at open (the
// prefix it was given and found intact), 0 when it read every event.
func (s *Session) Skipped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.skipped
}

// Prefix returns the prefix of events.jsonl this session has written or
// read: all of it (for state derived from every event so far; see
// OpenAt).
func (s *Session) Prefix() (Prefix, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return Prefix{}, fmt.Errorf("session %s was opened for reading only", s.ID)
	}
	if err := s.writable(); err != nil {
		return Prefix{}, err
	}
	m, err := s.log.Mark()
	if err != nil {
		return Prefix{}, err
	}
	return Prefix{Mark: m, LastSeq: s.lastSeq()}, nil
}

// fixPerms re-applies 0700 to the session directory and its
// subdirectories and 0600 to its regular files. Symlinks are left alone
// (every file yolop reads there is opened without following them).
func fixPerms(dir string) error {
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("set permissions of %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	for _, e := range entries {
		mode := os.FileMode(0)
		switch {
		case e.Type().IsRegular():
			mode = 0o600
		case e.IsDir():
			mode = 0o700
		default:
			continue
		}
		if err := os.Chmod(filepath.Join(dir, e.Name()), mode); err != nil {
			return fmt.Errorf("set permissions of %s: %w", filepath.Join(dir, e.Name()), err)
		}
	}
	return nil
}

// PeekWorkspace reads a session's workspace.json without taking its lock
// or reading its logs: what a caller deciding whether to open it at all
// needs (another process may be changing it meanwhile; whatever the
// caller then changes, it opens the session for).
func PeekWorkspace(dataDir, id string) (Workspace, error) {
	dir, err := sessionDir(dataDir, id)
	if err != nil {
		return Workspace{}, err
	}
	return readWorkspace(dir, id)
}

// OpenReadOnly loads a session without taking the lock, repairing or
// writing anything (for listing and showing a session another process may
// be using). A torn tail is ignored in memory. Writes are refused.
func OpenReadOnly(dataDir, id string) (*Session, error) {
	dir, err := sessionDir(dataDir, id)
	if err != nil {
		return nil, err
	}
	ws, err := readWorkspace(dir, id)
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", id, err)
	}
	data, err := jsonl.ReadFile(dirJoin(dir, EventsFile))
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", id, err)
	}
	s := &Session{ID: id, Dir: dir, ws: ws, readOnly: "opened for reading only"}
	scan := ParseEvents(EventsFile, data)
	s.events = scan.Events
	s.corrupt = scan.Corrupt
	if s.corrupt != nil {
		s.readOnly = s.corruptReason()
	} else if scan.Tail > 0 {
		s.repaired = append(s.repaired, fmt.Sprintf("%s: ignoring a torn final record (%d bytes at byte %d; %s); it is repaired when the session is next opened for writing",
			EventsFile, scan.Tail, scan.Valid, scan.TailReason))
	}
	return s, nil
}

func (s *Session) corruptReason() string {
	return fmt.Sprintf("%v; the session can be replayed but not continued: start a new session from its valid prefix with \"yolop sessions fork %s\"", s.corrupt, s.ID)
}

// Append writes one event with the next sequence number (the first is 1)
// and fsyncs events.jsonl before returning: an event that Append reported
// is durable. data is encoded as JSON (a json.RawMessage is used as is;
// nil omits the field).
func (s *Session) Append(typ, turn string, data any) (Event, error) {
	if typ == "" {
		return Event{}, errors.New("append event: empty type")
	}
	var raw json.RawMessage
	switch d := data.(type) {
	case nil:
	case json.RawMessage:
		if !json.Valid(d) {
			return Event{}, fmt.Errorf("append %s event: data is not valid JSON", typ)
		}
		raw = d
	default:
		b, err := json.Marshal(d)
		if err != nil {
			return Event{}, fmt.Errorf("append %s event: encode data: %w", typ, err)
		}
		raw = b
	}
	// No known secret is recorded, whoever wrote the event: a prompt
	// that quotes a key, a provider error, a notice.
	raw = secret.RedactJSON(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return Event{}, err
	}
	ev := Event{V: EventVersion, Seq: s.lastSeq() + 1, Type: typ, Time: time.Now().UTC(), Turn: turn, Data: raw}
	if err := s.log.Append(ev); err != nil {
		return Event{}, err
	}
	s.events = append(s.events, ev)
	return ev, nil
}

func (s *Session) writable() error {
	if s.closed {
		return fmt.Errorf("session %s is closed", s.ID)
	}
	if s.readOnly != "" {
		return fmt.Errorf("session %s is read-only: %s: %w", s.ID, s.readOnly, ErrReadOnly)
	}
	return nil
}

// Sync fsyncs events.jsonl. Append already fsyncs each event; Sync exists
// for callers that want an explicit barrier (it is cheap when nothing is
// pending).
func (s *Session) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil || s.closed {
		return nil
	}
	return s.log.Sync()
}

// Events returns all loaded events in seq order. The slice is a copy;
// the events' Data must not be modified.
func (s *Session) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loadPrefixLocked()
	return slices.Clone(s.events)
}

// LastSeq is the seq of the newest event (0 when there is none).
func (s *Session) LastSeq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastSeq()
}

func (s *Session) lastSeq() int64 {
	if len(s.events) == 0 {
		return s.base
	}
	return s.events[len(s.events)-1].Seq
}

// Workspace returns the session's workspace metadata.
func (s *Session) Workspace() Workspace {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := s.ws
	if ws.Worktree != nil {
		wt := *ws.Worktree
		ws.Worktree = &wt
	}
	return ws
}

// SaveWorkspace replaces workspace.json atomically (temp file, fsync,
// rename, fsync of the directory). SessionID and Created are kept; Updated
// is set to now.
func (s *Session) SaveWorkspace(ws Workspace) error {
	return s.saveWorkspace(func(Workspace) Workspace { return ws })
}

// saveWorkspace writes the workspace next makes of the current one. The
// file is written under wsMu, not mu, so that appends and readers do not
// wait for its fsyncs; writers of the workspace wait for each other.
func (s *Session) saveWorkspace(next func(Workspace) Workspace) error {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	// A session still being put on disk gets its first workspace.json
	// first: this one must not be replaced by it.
	if err := s.Durable(); err != nil {
		return err
	}
	s.mu.Lock()
	err := s.writable()
	cur := s.ws
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if cur.Worktree != nil {
		wt := *cur.Worktree
		cur.Worktree = &wt
	}
	ws := next(cur)
	if ws.SessionID != "" && ws.SessionID != s.ID {
		return fmt.Errorf("save workspace: session id %q does not match session %s", ws.SessionID, s.ID)
	}
	if err := checkWorkspace(ws); err != nil {
		return fmt.Errorf("save workspace of %s: %w", s.ID, err)
	}
	ws.SessionID = s.ID
	ws.Version = WorkspaceVersion
	ws.Created = cur.Created
	ws.Updated = time.Now().UTC()
	if err := writeWorkspace(s.Dir, ws); err != nil {
		return err
	}
	if ws.Worktree != nil {
		wt := *ws.Worktree
		ws.Worktree = &wt
	}
	s.mu.Lock()
	s.ws = ws
	s.mu.Unlock()
	return nil
}

// Path returns the path of a file inside the session directory.
func (s *Session) Path(name string) string { return dirJoin(s.Dir, name) }

// Repaired describes repairs done (or, read-only, deferred) when the
// session was opened. Empty when the files were intact.
func (s *Session) Repaired() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.repaired)
}

// ReadOnly reports whether writes are refused, and why.
func (s *Session) ReadOnly() (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readOnly != "", s.readOnly
}

// Corruption is the mid-file corruption of events.jsonl that made the
// session read-only, or nil.
func (s *Session) Corruption() *CorruptError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.corrupt
}

// Close releases the file and the lock. It is safe to call twice.
func (s *Session) Close() error {
	// A workspace write under way finishes before the lock goes.
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	errs = append(errs, s.Durable())
	if s.log != nil {
		errs = append(errs, s.log.Close())
	}
	if s.lock != nil {
		errs = append(errs, releaseLock(s.lock))
	}
	return errors.Join(errs...)
}

// Touch records that the session was used (workspace.json's updated time),
// and gives it a title from prompt, its first, when it has none.
// The workspace it starts from is the one the last writer left, so it
// may run beside other updates of the workspace.
func (s *Session) Touch(prompt string) error {
	return s.saveWorkspace(func(ws Workspace) Workspace {
		if ws.Title == "" {
			ws.Title = Title(prompt)
		}
		return ws
	})
}

// Title is the title a session gets from its first prompt: the prompt's
// first line, cut at 60 characters.
func Title(prompt string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	if r := []rune(first); len(r) > 60 {
		first = string(r[:59]) + "…"
	}
	return first
}
