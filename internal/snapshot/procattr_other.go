//go:build !linux

package snapshot

import "os/exec"

// dieWithParent is a no-op where the kernel cannot tie a child's life to its
// parent's.
func dieWithParent(*exec.Cmd) {}
