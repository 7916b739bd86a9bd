// Package spawn runs the tools' commands so that none outlives the yolop
// process that started it.
//
// Every command goes through a helper: the running binary re-executed with
// HelperArg as its first argument (Main, called first thing by the binary's
// main function and by the TestMain of test binaries that run tools, turns
// such an invocation into the helper). The helper
//
//   - makes itself a child subreaper (Linux PR_SET_CHILD_SUBREAPER), so every
//     descendant that loses its parent — `&` jobs, `setsid` and `nohup`
//     daemons, double forks — is re-parented to it rather than to init;
//   - starts the command and reports its pid;
//   - kills every descendant with SIGKILL (found by walking /proc from its own
//     pid, repeated until none is left) when the command exits, when yolop
//     asks it to (Proc.Kill) and when its control pipe from yolop reaches end
//     of file — which the kernel guarantees when yolop dies, however it dies.
//
// PR_SET_PDEATHSIG is not used for this: it fires when the parent *thread*
// exits (Go creates and retires threads at will) and reaches only the direct
// child, so `bash -lc` grandchildren would survive it.
//
// The helper is itself a process that can be killed with SIGKILL. To cover
// that, every helper and command is recorded in the session's process ledger
// (LedgerFile: pid, start time in clock ticks from /proc/<pid>/stat field 22
// and the boot id, so that a recycled pid is never mistaken for the recorded
// process), and every process started for a session carries SessionEnv in
// its environment. Reap, run by the next owner of the session lock, ends the
// recorded processes that still live, their descendants and every process of
// the user's whose initial environment names the session.
//
// With a Policy (or Seal), the command is started through a second stage of
// the same binary (ExecArg) that applies the Landlock sandbox to itself,
// drops CAP_SYS_ADMIN, CAP_PERFMON and CAP_SYS_PTRACE from every capability
// set and then executes the command, so the helper itself stays
// unconfined. With Policy.ReadOnly, that stage is started in a new mount
// namespace (and a user namespace when yolop is not root) and makes the
// paths read-only bind mounts before Landlock; see readonly_linux.go and
// ReadOnlyAvailable.
//
// No process a command can read holds a key: the helper runs in the
// command's environment (Spec.Env, already filtered), and Seal makes yolop
// undumpable, which with the capabilities gone keeps even a root command
// out of its /proc/<pid>/environ and memory. The helper
// also records in the ledger the orphans it adopts as a subreaper (a
// daemon's double fork), so that when the helper itself is killed, the
// next open still finds them; Sweep ends at session close what a killed
// helper left. StartIO gives the command a stdin pipe: MCP servers run
// under the helper too.
//
// Off Linux there is no subreaper and no /proc: the helper starts the command
// in its own process group and kills that group, so a process that leaves
// the group (setsid) escapes; Reap finds nothing. This is the documented
// fallback, not a guarantee.
package spawn
