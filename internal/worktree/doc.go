// Package worktree manages the Git worktrees that yolop sessions own.
//
// A session that starts inside a Git repository works in its own linked
// worktree, so that restoring a whole captured workspace can never erase edits
// in the user's checkout or in another session's worktree.
//
// # Layout
//
//	<data-dir>/worktrees/<repo-id>/<session-id>/   the session's worktree
//
// <repo-id> is RepoID of the repository's common git directory
// (<name>-<8 hex digits>), so two clones with the same name never share a
// directory. Worktrees live in the data directory, never under a temporary
// directory, because temp cleaners must not eat an agent's work. The
// directories yolop creates on the way are owner-only (0700).
//
// Each worktree is on its own branch yolop/<slug>-<short-id>, created from the
// commit the user's HEAD pointed at (a detached HEAD or a linked worktree of
// the user is a normal starting point). The branch is where the session's work
// lives; nothing in this package ever deletes a branch.
//
// The worktree's `.git` file names its administrative directory inside the
// repository (<common-dir>/worktrees/<name>), whose `commondir` file leads to
// the repository. List follows that chain with plain file reads, so scanning
// many worktrees costs one `git status` per worktree and nothing more.
//
// # Spares
//
// A repository keeps up to Manager.Spares parked worktrees that belong to no
// session, so that a new session starts without checking out the tree:
//
//	<repo-id>/.spare-<n>             a spare: HEAD detached, clean, a note
//	                                 <admin>/yolop-spare naming the session
//	                                 it was parked from ("" when prepared)
//	<repo-id>/.stale-<n>             a spare found unusable, kept for the user
//	<repo-id>/.tmp-<hex>(.lock)      a worktree being prepared or parked; the
//	                                 flock on .lock is held while it lives; a
//	                                 preparation writes "prepare <pid> <commit>"
//	                                 in it and touches its mtime as it progresses
//	<repo-id>/.tmp-<hex>.wait        flocked by the start that waits for that
//	                                 preparation (one waiter per preparation)
//	<repo-id>/.pending-<sid>.lock    a session being started: flocked until its
//	                                 session directory exists; holds the
//	                                 branch and commit it was made at
//	<repo-id>/.lock                  serializes claims and promotions (short)
//
// Session ids never start with a dot. Cleaning happens when a worktree is
// parked (park: move to .tmp-, `checkout --detach`, `reset --hard`, `clean
// -ffdx` keeping the write-blocklisted directories unless KeepNothing, then
// promote to .spare-<n>), so a claim is cheap: under .lock the lowest spare
// is moved to the session's name with `git worktree move`; outside it the
// spare is checked (link, lock, operations in progress, detached HEAD, refs
// of its earlier session, one `git status`, which also refreshes its index)
// and moved to the user's HEAD with `git read-tree -m -u <old> <new>`, git's
// two-tree merge that writes only the files that differ (skipped at the same
// commit), then the branch is created and HEAD pointed at it. PrepareSpare
// makes a spare from scratch (`worktree add --no-checkout --detach`, the
// add's own `reset --hard`, then an index rewritten a second later so no
// entry is racily clean).
//
// A start that finds no ready spare but a preparation in flight waits for
// it and claims its spare; turns hold <common-dir>/yolop/turns.lock shared
// and a preparation stops its checkout while one runs (turns.go says how,
// and why no git is ever left stopped).
//
// Crash model: a process killed while preparing or parking leaves a .tmp-
// worktree whose lock nobody holds: the next Start (or Prune) removes it. A
// start killed before its session directory existed leaves a .pending- lock
// nobody holds: the next Start parks (or removes) its worktree and deletes
// the branch made for it while it still points where it was made. A rename
// that git did not learn about is repaired with `git worktree repair`. A
// spare that is not as parking left it is never used.
//
// # Checkpoint refs
//
// Workspace snapshots of a session are anchored by
// refs/yolop/checkpoints/<session-id>/... in the worktree's repository, with
// the permission records kept beside them under refs/yolop/modes/<session-id>/.
// Remove and Prune delete exactly those refs, in one `git update-ref --stdin`
// transaction that names each ref's current value, so a ref that moved
// concurrently makes the whole deletion fail instead of losing the newer
// value. No other ref is touched.
//
// # Safety and crash model
//
// A worktree is removed only after a `git status` in it found no uncommitted
// change (tracked, or untracked and not ignored), unless the caller forces it.
// A worktree whose repository can no longer be reached cannot be checked, so it
// is treated like a dirty one. Removal deletes the checkpoint refs first and
// the worktree second: if the process dies in between, the worktree is still
// listed and the next prune finishes the job, whereas the other order could
// leave refs that nothing lists any more.
//
// Every git call goes through internal/git, which pins core.hooksPath to
// /dev/null: creating or re-adding a worktree never runs the repository's
// post-checkout hook or any other hook.
package worktree
