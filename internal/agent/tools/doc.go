// Package tools implements the tools the model calls: read_file, write_file,
// edit_file, list_directory, grep, delete_file, bash, tasks and checkpoint.
//
// Two channels report problems. A problem the model can fix (a bad path, text
// that is not in the file, malformed arguments, a command that failed) is a
// Result with IsError set and a message saying what was wrong and what to do.
// A Go error means the infrastructure failed (the disk, the spill directory)
// and the turn should stop.
//
// Confinement. Every path is relative to the active root (an absolute path
// inside the root is accepted too). Paths are cleaned; a path that escapes
// the root, lexically or through a symlink anywhere along it, is refused.
// Symlinks are resolved one component at a time against the root, so a link
// that points inside the root is followed and a link that leaves it is
// refused by name. Reads never enter a .git directory. Writes (write_file,
// edit_file, delete_file) into a write-blocklisted directory at any depth are
// refused, because checkpoints neither capture nor restore those directories:
// a change there could never be rewound.
//
// delete_file removes files, symlinks (the link, never its target) and empty
// directories; a non-empty directory is refused so that one call never
// removes a tree the model has not looked at.
//
// Shell commands run as `bash -c <command>` in the root, in the
// environment of the user's login shell (read once per session by
// `bash -lc 'env -0'`, see loginEnv; yolop's own environment when that
// fails), with stdin from /dev/null, under the spawn helper (package spawn): it and everything it
// starts die when it ends, when it is stopped, and when this process dies;
// the session's sandbox (package sandbox) confines its writes. While one
// runs it is an active writer in Tasks, so the checkpoint controller
// refuses to restore the workspace underneath it. When the shell exits,
// anything it left running is killed: a leftover process would be a writer
// nobody can see. Long-running processes belong in background tasks, which
// stay listed as active writers until they exit or are stopped. Processes
// an earlier yolop process left that could not be ended (AddSurvivors) are
// writers too while they live.
//
// Commands get the user's environment without yolop's credentials and
// without secret-looking variables (package secret; TaskOptions.PassEnv
// lets named ones through), and every result is stripped of known secret
// values before it is returned, so neither the log nor the model sees them.
//
// Races. A command running meanwhile (a background task) may swap a
// directory on a checked path for a symlink, also between the check and the
// use. So a file tool never uses a path by name after checking it: it opens
// the directory holding the path's last component beneath the root
// (openat2 with RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS and
// RESOLVE_NO_SYMLINKS; where the kernel has no openat2, a walk opening one
// component at a time with O_NOFOLLOW), and reads, writes (a temporary file
// and renameat in that directory), deletes (unlinkat) and lists through
// that directory's descriptor. A symlink met on the way means the tree
// changed since the check: the path is checked again, and a link that now
// leads outside is refused by name. What a tool opened stays inside the
// root whatever is swapped afterwards; a tool never follows a symlink it
// did not check. The root's own parent directories are trusted: they lie
// outside what a sandboxed command may write.
package tools
