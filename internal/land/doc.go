// Package land brings a session's work home: it shows it (Diff), merges it
// into the checkout the session was started from (Apply), takes it back out
// (Undo), and commits it on the session's own branch (Commit). Every host
// calls it; none of its logic lives in a host.
//
// # Trees
//
// The session's current files are captured with the session's snapshot
// engine (exact bytes, untracked files included, ignored and blocklisted
// paths excluded, no ref and so no new checkpoint). The user's checkout is
// captured the same way, by an engine whose private index and git directory
// live in this package's state directory: the checkout's real index, HEAD,
// branches and config are read, never written.
//
// Submodules are not checked out in a session worktree, and captures never
// hold gitlinks, so a gitlink of the base shows as removed in every diff
// from it. Diff, Apply and Commit take the base's gitlinks, and every file
// a capture holds at or beneath one, out of what they compare, with a note
// naming the session's files there. A nested repository in the checkout is
// left alone by the restore; apply neither counts nor journals its paths,
// so undo never compares them.
//
// Captures hold raw bytes. Diff and merge compare content the way git does,
// so when the repository converts content (core.autocrlf, eol or filter
// attributes) the paths that differ from the base are re-hashed through
// git's clean filters first, and merged content is passed through the
// smudge filters before it is written.
//
// # Apply
//
// git 2.39 has no `merge-tree --merge-base`: each side becomes a throwaway
// commit (`commit-tree`, parent = the session's base commit) and
// `merge-tree --write-tree` merges them, following renames. The merged tree
// is compared with the checkout's capture; only the paths that differ are
// written, through the snapshot engine's restore (validated before the first
// write, verified after the last).
//
// A file on one side where the other has a directory is a conflict of that
// path: merge-tree moves the file aside to "<path>~<commit>", a name in
// neither tree, so that entry is dropped and the checkout's side kept. A
// path the session creates where the checkout has an ignored or
// write-blocklisted file is "in the way": the apply, and its dry run, are
// refused until the user moves it. Apply never writes into another
// session's worktree.
//
// # State and crash model
//
// Per checkout (keyed by a hash of its path):
//
//	<data-dir>/apply/<key>/target          the checkout's path (for humans)
//	<data-dir>/apply/<key>/lock            flock: one apply or undo at a time
//	<data-dir>/apply/<key>/journal.jsonl   append-only records, fsynced
//	<data-dir>/apply/<key>/snapshot/       the checkout engine's private state
//
// Before an apply writes a byte, the checkout's capture is anchored at
// refs/yolop/apply/<session>/<n> (a ref pointing at a tree) and an
// `apply.started` record names it (before), the tree to be written (after)
// and the paths. `apply.done` follows once the written tree was verified.
// An undo journals `undo.started` and `undo.done` the same way. A record
// without its outcome was interrupted: the next apply, undo or session open
// of that checkout settles it. An interrupted apply is rolled back (each
// listed path that holds the written content gets the captured content back,
// `apply.aborted`); an interrupted undo is completed. A path holding neither
// side was edited by someone else and is left alone, and the note says so.
// A torn last line of the journal is ignored.
package land
