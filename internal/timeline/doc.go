// Package timeline is the append-only journal that says which turns form a
// session's active branch, and the store of model-context compaction
// checkpoints. Materialization (Build, Chain, InActiveRange, Select) is
// pure: it never touches the disk.
//
// # timeline.jsonl
//
// One JSON object per line, each with "v" (format version, 1), "type" and
// "ts" (RFC 3339, UTC):
//
//   - checkpoint.created: checkpoint ("cpN", N growing across branches),
//     parent (the head when it was made, "" = root), seq_before (last event
//     seq before the turn), prompt, snapshot {tree, ref} or capture_error,
//     left_out (files the snapshot does not hold for their size, larger
//     than [workspace] max_file_size: the checkpoint is partial; absent when
//     none). Fsynced before the turn runs. It opens the turn and empties the redo
//     slot.
//   - turn.completed: checkpoint, final_seq, status (completed, failed,
//     cancelled, interrupted), end {tree, ref}, files_changed (paths
//     that differ between snapshot and end, so listings run no git; absent
//     in records written before it existed, or without both snapshots),
//     paths (those paths, by any means they changed, at most MaxPaths;
//     paths_more counts the rest).
//     It closes the open turn and makes it the head.
//   - restore.started: the intent of a restore (restore id, target, mode
//     both|conversation|workspace, old_head, new_head, abandoned_head,
//     recovery {tree, ref}, target_tree, redo), fsynced before any file is
//     touched.
//   - head.moved: the same fields, fsynced after the restored tree was
//     verified. It sets the head to new_head (unchanged in workspace mode)
//     and fills the redo slot with abandoned_head and recovery. It normally
//     completes a restore.started with the same id; one without an intent
//     is accepted too.
//   - restore.aborted: closes an intent whose restore was rolled back (also
//     written when an interrupted restore is repaired on open).
//   - redo.cleared: empties the redo slot.
//
// Every record must fit the ones before it: ids unique and growing,
// parents and heads known, old_head equal to the current head, seq_before
// not behind any recorded seq, no turn or restore started while another is
// unresolved, and so on (see State.Check). Log.Append checks a record
// before writing it, so a bug in a caller cannot damage the journal.
//
// # One state
//
// The open Log holds the session's only materialized State: OpenLog builds
// it once from the file, and Append applies each record to it in place.
// Applying a turn's records costs O(1) whatever the length of the timeline
// (the active-range index and KnownFiles, the tree yolop last left in the
// workspace, are kept up to date as records apply); only a head.moved
// recomputes the index, O(active branch). The checkpoint controller, the
// log's single writer, reads it through Live; others take a copy (State)
// or, without the journal, Build or Freeze the records.
//
// # Active branch
//
// The active branch is the chain of parents from the head to the root,
// plus the open turn. An event tagged with turn X is active when X is on
// that branch and its seq lies after X.seq_before and not after the
// seq_before of X's active child (unbounded for the newest turn): X's own
// events plus those written between turns while X was the head.
//
// # compaction-checkpoints.jsonl
//
// One Compaction per line: provider, model, format, source_seq, turn (the
// checkpoint source_seq belongs to), replacement (provider-opaque JSON,
// which may hold message text: the file is 0600). Select picks the latest
// compatible record on the active branch, never one whose source lies on
// an abandoned suffix, and only moves forward in source_seq.
//
// # Crash model and recovery
//
// A record is one write of one line followed by fsync; a failed write is
// truncated away. A crash can therefore only leave a torn last line:
// bytes without a final newline, or trailing lines that are not JSON
// objects (for example a zero-filled block). On open it is kept aside in
// "<file>.corrupt-<time>" (0600, fsynced), the file is truncated to its
// last complete record and fsynced.
//
// Anything else is corruption of the committed prefix and is never
// repaired or skipped: a bad line followed by a good one, or a well-formed
// record that does not fit (including an unknown type or a newer version,
// which a newer yolop may have written). The records before it are
// materialized so replay works, the state is read-only with a reason
// naming file, line and problem, and appends are refused; the user forks
// the session from its valid prefix ("yolop sessions fork <id>") or repairs
// the file by hand. Guessing a branch would be unsafe. A damaged
// compaction store likewise keeps its valid prefix and refuses appends;
// model context then falls back to the surviving records and raw events.
package timeline
