// Package setup runs a worktree session's setup command ([worktree] setup
// in the settings: installing dependencies, generating files) once, in
// the session's new worktree, before its first turn and so before its
// first checkpoint: what the setup installs is the session's starting
// point, not a change of its first turn. It runs like a foreground command
// of the agent's (the session's environment and sandbox), its output goes
// to the host as a command's would, and its failure is told to the user
// and to the model but never stops the session.
//
// # Format
//
// <session>/setup.json (File), 0600, one JSON object and a newline:
//
//	{"command":"npm ci","started":"2026-12-01T10:00:00Z","ended":"2026-12-01T10:00:12Z","exit_code":0}
//
// command is the command as the settings gave it; started and ended are
// UTC; exit_code is the command's (-1 while it runs, and when it did not
// exit by itself); failure says why it did not succeed (its exit code, the
// signal that ended it, a sandbox refusal, a start failure), left out when
// it did. ended is left out while it runs.
//
// # Crash model
//
// The record is written atomically (temp file, fsync, rename, fsync of the
// directory) before the command starts, and again when it ends. Its
// existence is what counts: a session with a record never runs its setup
// again, not on -c and not after a crash in the middle of it, so a
// half-done setup is never run a second time over what it left.
//
// # Recovery
//
// None: a record without ended is a setup that was interrupted (the
// process died or the turn was cancelled); the session goes on without
// it, as after a failed one. A record that does not parse counts as
// started too.
package setup
