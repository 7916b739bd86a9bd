// Package timeline is the append-only journal that says which turns form a
// session's active branch, and the store of model-context compaction
// checkpoints.
//
// # Format
//
// <session>/timeline.jsonl holds one JSON object per line, each with "v"
// (format version, 1), "type" and "ts". The types are:
//
//   - checkpoint.created: checkpoint, parent, seq_before, prompt, snapshot
//     {tree, ref} or capture_error. Written and fsynced before the turn runs.
//   - turn.completed: checkpoint, final_seq, status (completed, failed,
//     cancelled, interrupted), end {tree, ref}. It advances the head to the
//     checkpoint.
//   - restore.started: the intent of a restore (restore, target, mode,
//     old_head, new_head, abandoned_head, recovery, target_tree, redo),
//     fsynced before the workspace is touched.
//   - head.moved: the same fields, fsynced after the restored tree was
//     verified. It moves the head and fills the redo slot.
//   - restore.aborted: closes an intent whose restore failed and was rolled
//     back (also written by the repair of an interrupted restore).
//   - redo.cleared: the redo slot is no longer the implicit redo target.
//
// <session>/compaction-checkpoints.jsonl holds one Compaction per line.
//
// # Crash model and recovery
//
// A record is one write of one line. A crash can leave a torn last line: it
// is kept aside in "<file>.corrupt-<time>" and truncated away on open, so
// the journal ends at the last complete record. A bad line followed by good
// ones is corruption of the committed prefix: nothing is repaired, and
// Build marks the state read-only with the reason, because guessing a
// branch would be unsafe.
//
// Build is a pure function of the records; it never touches the disk.
package timeline
