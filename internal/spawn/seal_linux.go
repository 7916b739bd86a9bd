package spawn

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Seal makes this process's memory and environment unreadable to other
// processes of the same user: /proc/<pid>/environ, mem, maps and ptrace
// then need CAP_SYS_PTRACE (Linux PR_SET_DUMPABLE 0, which also means no
// core dump). yolop's main calls it first thing: the environment yolop was
// started with (provider keys included) stays on its stack for the life
// of the process, and a tool must not read it. The helper holds only its
// command's environment and is not sealed (see helperMain). A sealed
// process's children cannot be given user-namespace id maps by it (their
// /proc files belong to root until they execute): such a child is started
// from an unsealed process (the helper, the probe's launcher).
func Seal() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the process undumpable: %w", err)
	}
	return nil
}

// droppedCaps are the capabilities a sandboxed command never holds, even as
// root: CAP_SYS_PTRACE reads any process's environment and memory,
// CAP_PERFMON and CAP_SYS_ADMIN can read them through perf events and BPF.
var droppedCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_PERFMON, unix.CAP_SYS_PTRACE}

// dropCaps removes droppedCaps from this process's bounding, ambient,
// inheritable, permitted and effective sets, so that neither this process
// nor anything it executes (a set-uid or file-capability program included)
// holds them. Without CAP_SETPCAP (an unprivileged user) the bounding set
// cannot be changed; then no_new_privs, which the Landlock stage sets, is
// what keeps an executed program from gaining them.
func dropCaps() error {
	for _, c := range droppedCaps {
		// EINVAL: a kernel that does not know the capability (CAP_PERFMON
		// before Linux 5.8), so nothing can hold it.
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_LOWER, c, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d from the ambient set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	for _, c := range droppedCaps {
		keep := ^uint32(1 << (c % 32))
		data[c/32].Effective &= keep
		data[c/32].Permitted &= keep
		data[c/32].Inheritable &= keep
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}
