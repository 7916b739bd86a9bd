// Package session stores yolop sessions on disk: one directory per session
// with its metadata, its event log and a lock.
//
// # Layout
//
//	<data-dir>/sessions/<session-id>/          0700
//	    workspace.json                          0600  metadata (Workspace)
//	    events.jsonl                            0600  event log (Event per line)
//	    lock                                    0600  flock target, holder's pid
//	    timeline.jsonl                          0600  owned by package timeline
//	    compaction-checkpoints.jsonl            0600  owned by package timeline
//	    summary.json                            0600  listing digest (Digest), derived
//	    resume.bin                              0600  what opening needs (package resume), derived
//	    checkpoint-stats.json                   0600  owned by package checkpoint, derived
//	    git-state.jsonl                         0600  in place: git's state around each turn (package gitstate)
//	    snapshot/                               0700  the snapshot engine's private git dir and index
//	    <file>.corrupt-<UTC time>               0600  torn tails kept aside
//
// # Workspace kinds
//
// workspace.json's kind says where the session works, for its whole life:
// "worktree" (a git worktree of its own; worktree.path/branch/base), "in-place"
// (the user's checkout: repo_root is its top level, common_dir its
// repository's common git dir; snapshots are refs in that repository, and a
// restore undoes agent turns path by path; with folder true, a folder
// outside git: repo_root is the folder, common_dir its private repository
// in the data directory, <data-dir>/folders/<key>/git, and there is no
// git-state.jsonl) or "conversation" (no file
// snapshots; no_workspace_reason says why). Listings and JSON call them
// worktree, in-place and none (Mode). A session written with kind
// "conversation" and reason "worktrees are off (--worktree off)" predates
// in-place sessions and stays conversation only.
//
// In place, git-state.jsonl has one line per turn, appended after it ends;
// its format and crash model are package gitstate's. It only informs
// previews: a torn or missing line costs their notes, never a restore.
//
// The data dir is --data-dir, else $YOLOP_DATA_DIR, else
// $XDG_DATA_HOME/yolop, else ~/.local/share/yolop. Session ids are "s_"
// plus a lowercase ULID, so they sort by creation time. Permissions are
// re-applied on every Open: prompts and tool output are private.
//
// # events.jsonl
//
// One JSON object per line, terminated by '\n':
//
//	{"v":1,"seq":7,"type":"tool.result","ts":"2026-12-01T10:00:00Z","turn":"cp3","data":{...}}
//
// v is the format version (1). seq starts at 1 and grows by exactly one per
// line across all branches of the conversation; rewinding never rewrites
// or deletes events, it only changes which ranges are replayed (see package
// timeline). turn is the checkpoint id of the turn the event belongs to,
// or the head at the time for events written between turns ("" at the
// root). data is the type-specific payload.
//
// # Writing and crash model
//
// One process writes a session at a time: Open takes a non-blocking flock
// on <session>/lock and writes its pid there; a second opener (another
// process, or another Open in the same process) gets a *LockedError naming
// the holder and changes nothing. The lock file is never deleted.
//
// Append encodes the event, writes the line with a single write call and
// fsyncs before returning, so every event Append reported survives a crash
// or power loss. A write that fails is rolled back by truncating to the
// previous length. A crash can therefore leave at most one incomplete
// record, and only at the end of the file: a "torn tail". workspace.json
// is replaced atomically (temp file, fsync, rename, fsync of the
// directory). Files are opened with O_NOFOLLOW: a symlinked log is refused
// rather than written through.
//
// A session made by Start (every host's new session) is on disk in the
// background: its directory, lock and empty logs (events, timeline,
// compactions) exist when Start returns, and workspace.json is written
// (content synced, then its name, after the names of the lock and the
// logs) and the directory made durable while the first turn's capture
// runs. Until Durable returns, the session is incomplete to others and a
// crash may leave no session or an incomplete one ("workspace.json is
// missing" in the listing). Nothing
// outside the directory names it before then: the snapshot engine waits
// for Durable before its first ref, the first turn before it returns, a
// workspace write and Close before theirs. Create is Start and Durable.
//
// # Recovery
//
// Open reads events.jsonl and classifies it:
//
//   - Torn tail: final bytes without a newline, or final lines that do not
//     parse with no valid line after them (an interrupted append, or a
//     zero-filled block after a crash). Open copies those bytes to
//     events.jsonl.corrupt-<time> (fsynced), truncates the log to the valid
//     prefix, fsyncs it, and reports the repair in Repaired. Nothing is
//     lost; the kept bytes can be inspected by hand.
//   - Mid-file corruption: a bad line followed by a valid one, a seq gap or
//     repeat, an unknown version, or an event without a type. That cannot
//     come from an interrupted append, so yolop does not guess: Open
//     succeeds with the valid prefix loaded, repairs nothing, and marks the
//     session read-only (ReadOnly, Corruption). Replay works; Append and
//     SaveWorkspace fail with ErrReadOnly and a message pointing to
//     "yolop sessions fork <id>", which starts a new session from the valid
//     prefix.
//
// A torn tail may hold events the timeline already names (the final_seq
// of a turn.completed). The checkpoint controller's Repair then appends a
// notice of kind "event_lost" for each lost seq, tagged with the turn that
// owned it, so the log stays gap-free, seq keeps growing past the highest
// seq either journal has seen, and the transcript says what was lost. A
// timeline naming more than a thousand missing events was not damaged by a
// torn write: the session then opens read-only with the fork advice.
// Before a turn.completed is journaled, events.jsonl is synced, so a
// timeline never names an event that was not on disk.
//
// OpenReadOnly (listing, showing) takes no lock and writes nothing; a torn
// tail is ignored in memory and left for the next writer to repair.
//
// # Derived files
//
// summary.json (Digest) holds what `yolop sessions` and `-c` need beyond
// workspace.json: turns on the active branch, the read-only reason and the
// last-used time ("rev":2; a digest without it is stale). The writer saves
// it after every turn and restore; a listing that finds it missing or
// stale computes it from the logs and saves it (atomically, without
// fsync, and only if the logs did not change while it read them). It
// names the size and modification time of the two logs it describes and
// is ignored as soon as either differs, so a crash or an older yolop
// never makes a listing wrong. Deleting it loses nothing.
//
// resume.bin (written by package app) lets a process open a long session
// without replaying it: the timeline's state and the logged usage as of a
// prefix of each log, and a Prefix of events.jsonl (its length, the seq of
// its last event and a hash of its last 4 KiB). OpenAt reads only the
// events after a prefix whose hash still matches, and loads earlier ones
// when asked: EventsAfter bisects the file on the seq each line begins
// with and reads from there; Events reads the rest. Should the skipped
// bytes no longer parse to the events the prefix promised (the file was
// edited in place), the session becomes read-only like any session whose
// committed prefix is damaged. A prefix that does not match, a damaged or
// other-version resume.bin, or none at all: the log is read whole, as
// always. Deleting it loses nothing.
package session
