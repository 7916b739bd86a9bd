// Package snapshot captures a session worktree's exact on-disk state as a Git
// tree and restores a worktree to such a tree.
//
// # Storage
//
// A snapshot is a tree object in the worktree's own repository, anchored by a
// private ref that points directly at the tree:
//
//	refs/yolop/checkpoints/<session-id>/<name>
//
// Without the ref the repository's gc would eventually prune the tree. Refs
// are shared by all worktrees of the repository; DeleteSessionRefs removes one
// session's refs and nothing else.
//
// A tree holds only 644 or 755 for a file. The files a capture finds with
// narrower permissions (a 0600 key, a 0400 file: any mode lacking a bit its
// tree mode would grant) are recorded in a blob beside the snapshot,
//
//	refs/yolop/modes/<session-id>/<name>
//
// written with the snapshot ref and deleted with it
// (DeleteSessionRefs, DeleteRef, `yolop worktree prune`, `sessions rm`). The
// blob is "yolop-modes 1 <tree>" then "<octal perm> <path>" entries, each
// NUL-terminated, sorted by path; ignored files are left out. A restore to a
// tree applies the narrowest permissions recorded by any snapshot of this
// session pointing at that tree: a written file is created with its final
// permissions (never more open, even for a moment), and a file whose content
// did not change but was opened up since is narrowed again.
//
// In a repository that keeps its refs in files (git's default backend) and
// gives them no shared permissions, a capture writes both as git's files
// backend does, without a git process: <ref>.lock created exclusively, the
// id and a newline written and synced, renamed over the ref (looseref.go).
// Written so, the record goes first: a crash between the two leaves a
// record without its snapshot ref, never a snapshot ref without its record.
// The ref's directories are opened one by one, never through a symlink.
// A record to remove, a reftable or shared repository, a lock held, a
// directory or a symlink in the way go to one `git update-ref --stdin`
// transaction, which completes the update or reports why it cannot.
//
// Each session also owns a state directory (Options.StateDir, outside the
// worktree, mode 0700):
//
//	<state>/git/            private GIT_DIR: HEAD (the last captured tree, or
//	                        the worktree's HEAD commit before the first
//	                        capture), config, info/attributes, info/exclude,
//	                        sharedindex.<hash> (shared part of the index)
//	<state>/index           persistent private index describing the worktree,
//	                        in split-index mode
//	<state>/index.settle    present while the index may hold racily-clean entries
//
// Every capture runs git with GIT_DIR=<state>/git, GIT_INDEX_FILE=<state>/index,
// GIT_OBJECT_DIRECTORY=<repository objects> and GIT_WORK_TREE=<worktree>. The
// private info/attributes disables every content conversion (text, eol,
// filter, ident, working-tree-encoding) and core.autocrlf is pinned off, so
// blobs hold the bytes that were on disk and a restore writes them back
// unchanged. Because that GIT_DIR is not the repository's, its ignore rules
// are carried over explicitly: the repository's info/exclude is copied into
// the private one together with the write blocklist, and the repository's
// core.excludesFile is passed on the command line.
//
// # Ignore rules from outside the worktree
//
// The repository's info/exclude and core.excludesFile are shared by every
// worktree and belong to no snapshot, so they can change under a session,
// as can every .gitignore and what the repository's index tracks. A capture
// holds what `git add -A` on a copy of the worktree's index would: the
// files the repository tracks and the untracked files no rule ignores,
// however long the session's private index has remembered a file (the
// index is reconciled with the rules whenever they change; rules.go). So a
// file captured before a rule matched it is ignored by later captures, of
// this process and of every later one. Such a file is still restored byte for byte. The verification then
// accepts a written path its capture leaves out only when the rules in
// force ignore it and the worktree holds exactly the target's bytes and
// mode (RestoreResult.Ignored; RestoreResult.Tree is what captures see).
// CheckRestore names those paths in advance, evaluating the rules with the
// .gitignore files the restore leaves (the target's where it writes them,
// the worktree's elsewhere) in a scratch work tree. A restore that fails
// after writing removes the files it created where nothing was that the
// rules hide: the caller's rollback restores its own earlier capture,
// which cannot see them.
//
// A restore never overwrites what no snapshot holds. An entry on disk
// where it must write a path the capture it starts from does not have (an
// ignored file, or one created since), or inside a directory that a file
// replaces, is a *BlockedError found before the first write (and by
// CheckRestore), unless it already holds the target's content.
//
// # Nested repositories and the worktree's .git link
//
// Every capture walks the worktree (in Go, beside git status, not following
// symlinks, skipping the write blocklist). A directory holding a .git entry
// is a nested repository or submodule: its entries are dropped from the
// private index, so a directory captured as plain files before it became a
// repository stops being captured, and a restore skips every change at or
// below one that is in the worktree now (RestoreResult.LeftAlone, previews'
// excluded list). The restore is then verified against the target minus
// those subtrees. The same walk yields the permissions above.
//
// A shell command in the worktree can rewrite its .git file (point it at
// another repository). With Options.CommonDir set, Open and every later
// capture, restore, diff and ref call first run git.CheckWorktreeLink,
// which repairs the link from the repository's own record of the worktree
// or fails with the reason, changing nothing; LinkRepairs reports repairs.
//
// # Capture
//
// Capture is status-driven so that its cost follows `git status`, not the
// size of the repository: `git status` against the private index lists the
// paths whose content differs, only those are handed to `update-index`, and
// `write-tree` produces the tree, which then becomes the private HEAD. So
// status compares the index with the tree of the previous capture: that
// comparison costs nothing (the index's cache tree matches HEAD everywhere),
// and when status reports nothing at all the index still holds exactly that
// tree, so it is returned without running anything else. The engine trusts
// HEAD that way only when it is a tree it captured and the HEAD file still
// names it; a commit there (before the first capture), a pruned tree or a
// lost index only costs the full path. The private index is split, so each
// update writes the few changed entries, not the whole index; a missing
// shared part means a rebuilt index.
//
// When status lists a few paths (up to 64) and no index-side difference, the
// index holds exactly the private HEAD's tree, and the new tree is built
// without reading the index at all (fasttree.go): the listed files are
// read in Go (opened without following a symlink or waiting on a FIFO;
// symlinks' targets read), one `cat-file --batch` reads the HEAD tree's
// directories along the listed paths, and the edited directories are built
// bottom-up (a deleted path's entry goes, an emptied directory goes, a new
// directory is created); the blobs and trees are written as loose objects
// in Go (loose.go: zlib'd at objects/xx/..., read-only, each written out,
// one synced, then renamed into place, as git's batch fsync mode does). A
// shared repository (core.sharedRepository) or files too big to hold leave
// the writing to `hash-object -w --no-filters` and `mktree --batch`, whose
// ids must equal the ones computed in Go. The edit records which paths it
// changed between its base and the tree it wrote; Diff of those two trees
// returns that record (diff-tree would list the same). Every case the
// index path treats specially declines to it: a
// listed path that is now a directory or neither a file nor a symlink, a
// parent directory that is a symlink, not a directory or holds a nested
// repository, a file<->directory swap, a held index lock. The private index
// then catches up in the background (`update-index` on the same paths; on
// Linux it is killed with the process); the next capture waits for it, and
// its status compares the index with the new HEAD, so an update that failed
// or saw a later edit shows up as an index-side difference and that capture
// takes the index path. Nothing the background update leaves is trusted.
//
// The first capture after a seed takes the tree edit too, from the tree of
// the worktree's HEAD commit, when status shows the index equal to that
// commit and the seed's clean-up removed no entry (a submodule, which
// status does not report). Its base trees are not read with cat-file: they
// are computed from the seeded index's entries (read once from the user's
// index, which also gives the seed's bytes and the rules' path set), as
// write-tree would (intent-to-add entries left out), and used only when the
// root computed equals the commit's tree id; a directory the edit does not
// change takes its tree id from the user's index's cache tree (the TREE
// extension, which git keeps valid only while it is those entries' tree
// and trusts for its own write-tree) when the entry counts exactly the
// seed's entries there. A tree edit with many new
// objects (24 or more blobs and trees, up to 20,000 paths and 64 MiB of
// file content) reads the files in Go and writes every object into one pack
// instead of one loose file per object: for SHA-1 the pack and its version
// 2 index are written in Go (packWriter: the pack and the index's
// temporary file synced at once, the pack renamed, then the index, then
// one fsync of the directory), for SHA-256 through
// `index-pack --stdin`; then `cat-file --batch-check` confirms git finds
// each id. Small edits stay loose, so packs do not pile up. After a packed
// edit the private index is written in Go while the pack is written
// (indexwrite.go): the entries of the index the capture edited, the changed
// ones replaced, added or removed with the stat data taken before their
// bytes were read, entries racily clean with respect to that index smudged
// (size 0, as git's own index write leaves them), and a cache tree for
// every directory whose root must equal the captured tree. It is written in
// git's split form (a shared index named after its checksum, then a small
// index whose link extension names it with two empty bitmaps, and the
// cache tree), under git's index.lock, and renamed over the old index only
// once the pack is stored; a process killed before then leaves the old
// index, a stale lock, which the next Open removes, and perhaps a shared
// index no index names, which the next index write removes. What it does not
// handle (a split or sparse index, flagged or unmerged entries, a required
// extension, a system without the stat data) is left to the background
// update-index, which after a packed edit ends with `write-tree` to
// rebuild the cache tree update-index invalidated, so the next status
// compares the index with HEAD cheaply. A seed's first status keeps the
// private index whole (core.splitIndex=false); whatever writes it after
// the capture writes it split.
//
// The private index is seeded on first use by copying the worktree's real
// index with its mtime preserved (or, when attributes or core.autocrlf could
// have converted the content stored in the real index, from the private
// HEAD's tree without stat data so that every file is hashed once as raw
// bytes). The capture that seeds runs no settle pass: its status re-hashes
// the racily clean entries, and its own index write (update-index, or the
// background update after a tree edit, or the index written in Go, which
// smudges them) settles them, since git re-checks every entry racy with
// respect to the index it read before it writes a newer one; the marker
// goes once such a write succeeded. The real index, HEAD, refs, reflogs and config are never written;
// only the checkpoint ref is.
//
// The first capture after a seed made from the user's index unchanged (no
// conversion, nothing pruned, flagged, unmerged or sparse, not split, on
// Linux) runs no status either (seedstat.go): its walk keeps the stat data
// of every file, which are compared with the seed's entries by git's rules
// as the engine pins them, to the nanosecond and with the racy-git rule at
// the second; whatever they cannot vouch for is listed as changed and
// hashed by the tree edit. Only where the walk found files no entry names
// does git list the untracked ones (`ls-files --others` limited to those
// files, or to the topmost directory above them that holds no entry). The
// tree edit then takes base's trees from the seed only when the seed's own
// tree is base (its staged changes are otherwise the index path's), and a
// worktree that differs from the seed nowhere is the commit's tree only
// when the seed's cache tree names it. A walk that could not read a
// directory or stat a file in it, more than 2,000 files listed, or a file
// listed over Options.MaxFileSize (only a hash tells whether it changed,
// and the capture leaves out a changed one) leave the capture to a status. Since the comparison can be stricter than the git at hand (one
// built without nanosecond stat data compares to the second), the
// background update removes every path from the index before adding it
// back, so that git hashes what the tree edit hashed instead of keeping an
// entry whose stat data it takes as unchanged.
//
// A recycled worktree's first capture runs no status of its own when the
// claim has just proved the worktree clean with a status on its real index
// (Options.KnownClean): the seed then holds exactly the entries that status
// compared every file with, so writing its tree gives the worktree's tree.
// This holds only when the seed carries stat data (no conversion), no
// assume-unchanged or skip-worktree entry hides a file, the repository's
// core.fileMode, core.symlinks and core.ignoreCase equal the engine's pinned
// values, and no nested repository sits where entries are; otherwise the
// capture runs as usual. Its walk comes from the one made when the spare was
// parked (Options.KnownWalk): permissions are trusted for entries whose
// inode time predates that walk (less a second for the coarse clock), since
// the claim's status refreshed the stat data of every entry it found
// changed, and the other entries are looked at. A walk the claim made
// beside its status, after arming the watcher the engine takes over
// (Walk.Watched), trusts the watcher instead: only the entries it saw
// change are looked at (a checkout that ended just before the walk would
// send a second's worth of its files to lstat again); one lstat of <dir>/.git per
// directory finds nested repositories. The seed is read straight from the
// index file (versions 2 to 4) rather than through `ls-files`. A watcher
// armed before the claim's status (Options.Prewatch) is given nothing by
// that capture: what it saw since it was armed, the claim's two-tree
// checkout included, is looked at by the next capture, which so needs no
// walk. Nothing of it is on disk: a process that dies holds no watcher,
// and the next one walks.
//
// # Folders outside git
//
// With Options.Folder the worktree is a folder in no repository, and GitDir
// (= CommonDir) is the folder's private repository, kept by the caller
// outside the folder: every git process on it is pinned there (git.Dirs),
// nothing is ever written into the folder, and there is no .git link to
// guard. InitFolder makes that repository: no template (no hooks), a config
// with nothing that runs, an info/attributes that gives every path
// "-text -eol -filter -ident -working-tree-encoding !diff !merge" (the
// highest-precedence attributes file, so no .gitattributes in the
// folder can name a filter, textconv or merge driver for yolop's git), and
// an info/exclude holding the folder's .yolopignore, the blocklist and the
// restore temporaries; captures read the .yolopignore again every time.
//
// ImportFolder is the folder's first capture. `ls-files --others
// --exclude-standard` against no index lists what a capture takes
// (.gitignore files and the user's global excludes apply as in git;
// directories holding a .git entry are nested repositories and left out, as
// the capture's walk leaves them out); packWriter writes every blob, the
// trees and the commit refs/heads/folder into one pack (version 2, no
// deltas) and its version 2 index, fsynced and renamed into objects/pack
// (index last); and the repository's own index is written in Go (version
// 2, sorted, each entry with the stat data of the file as it was read, no
// extensions). The session's private index is seeded from that index
// without the conversion checks (its blobs are raw bytes by construction),
// so the session's first capture hashes only what changed since the
// import. A file that shrinks while it is read is left out of the import
// and found by that first capture.
//
// Options.MaxFileSize leaves files larger than it out of every capture: an
// untracked one is never added, one the index holds is removed from it (its
// path disappears from the tree). Snapshot.LeftOut names them, so callers
// can label the snapshot partial; a restore never touches them (they are in
// neither the tree it starts from nor the target).
//
// # Crash model
//
// The private index is a cache of the worktree's state: losing it, or finding
// it corrupt, only costs one slower capture (it is rebuilt). A capture killed
// half way leaves no ref and no partial tree is ever returned. No ref is
// written before Options.BeforeRef returns (the session the ref names is
// on disk by then); when it fails, every capture fails with ErrNotOnDisk
// and the caller runs no turn on it. A restore is
// interrupted at worst between two file renames: every file is written to a
// temporary name in its own directory and renamed into place, so no file is
// ever half written. The caller keeps a recovery snapshot of the pre-restore
// state and restores it on failure; Failpoint lets tests stop the process
// between the restore steps.
//
// Before Restore returns, the restored bytes are flushed to stable storage,
// because the caller journals the restore as done right after. On Linux one
// syncfs(2) on the worktree's file system does it. Elsewhere (darwin has no
// syncfs) each written file is fsynced before it is renamed into place
// (os.File.Sync issues F_FULLFSYNC on darwin) and then every directory whose
// entries changed, and the worktree root, is fsynced: slower for large
// restores, equally durable.
package snapshot
