// Package gitstate records, for a session that works in place in a git
// checkout, git's own state around each turn, and says what previews must
// tell about it.
//
// In place, the agent's commands write the user's checkout but must not
// write its .git: the sandbox mounts it read-only where it can. Where it
// cannot (no namespaces, or the sandbox off), or for what a restore cannot
// undo anyway (HEAD moving by the user's own commits), yolop reads the git
// state that matters before each turn and names what changed, in the
// turn's result and in every later preview. The record is also how a
// preview knows HEAD at a checkpoint.
//
// # What is compared
//
// State is HEAD's commit and a short hash of every file that decides what
// git runs or where refs point: the checkout's git dir's HEAD and
// config.worktree (a linked worktree's own git dir, as its .git file
// names it), and the common dir's config, hooks/, info/, refs/ (yolop's
// own refs/yolop/ left out) and packed-refs. Read reads them without
// running git, so nothing the agent planted there runs.
//
// # Format
//
// <session>/git-state.jsonl (File), 0600, one JSON object per line,
// appended after each turn of an in-place session in a git checkout:
//
//	{"turn":"cp3","head":"<commit HEAD was at when it started>","changed":[".git/hooks/pre-commit"]}
//
// changed lists the git files the turn changed, as paths relative to the
// checkout (or absolute, for a common dir outside it); head and changed
// are left out when empty. A folder outside git has no such file.
//
// # Crash model and recovery
//
// The file only informs previews (HEAD moved since a target, git files a
// turn changed); nothing is restored from it. A line is appended with one
// write and not fsynced; a crash may lose the last line or leave it torn.
// Readers skip any line that does not parse and never repair the file: a
// torn or missing line costs those notes, never a restore. Files are
// opened with O_NOFOLLOW: a symlinked journal is refused rather than
// written through.
package gitstate
