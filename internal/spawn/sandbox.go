package spawn

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// ExecArg as the first argument makes Main apply a sandbox Policy to
// itself and execute the command: the helper's second stage, run in the
// command's own process so that the helper stays unconfined.
const ExecArg = "__yolop-sandbox-exec"

// Level is a sandbox level: how much a command is confined.
type Level string

// Levels. A Policy is at write or strict; off has none.
const (
	LevelOff    Level = "off"
	LevelWrite  Level = "write"  // writes confined to what checkpoints cover plus declared caches
	LevelStrict Level = "strict" // write, and outbound TCP only to listed ports
)

// Policy confines a command's writes (and, at level strict, its outbound
// TCP connections).
type Policy struct {
	Level Level `json:"level"` // write or strict
	// MinABI is the Landlock ABI the level needs; the command does not
	// start on an older kernel.
	MinABI int `json:"min_abi"`
	// WriteDirs may be written recursively; WriteFiles are single files
	// (devices) that may be written.
	WriteDirs  []string `json:"write_dirs"`
	WriteFiles []string `json:"write_files"`
	// Ports are the TCP ports strict allows connecting to.
	Ports []uint16 `json:"ports,omitempty"`
	// ReadOnly are absolute paths (directories or files) the command may
	// read but not write, whatever WriteDirs say: each is bind-mounted
	// read-only in a private mount namespace made for the command (with a
	// user namespace when yolop is not root), and Landlock then forbids
	// the command to unmount or remount it. Set it only when
	// ReadOnlyAvailable said yes; the command does not start when a path
	// cannot be made read-only.
	ReadOnly []string `json:"read_only,omitempty"`
}

// execMain applies the policy in os.Args[2] (see confine), drops the
// key-reading capabilities and executes os.Args[3:].
func execMain() int {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "yolop sandbox: usage: "+ExecArg+" POLICY COMMAND...")
		return 126
	}
	var p *Policy // null: the kernel cannot apply the level, only the capabilities go
	if err := json.Unmarshal([]byte(os.Args[2]), &p); err != nil {
		fmt.Fprintf(os.Stderr, "yolop sandbox: bad policy: %v\n", err)
		return 126
	}
	if p != nil {
		if code := confine(*p); code != 0 {
			return code
		}
	}
	// Last (mounting the read-only paths needed CAP_SYS_ADMIN): a command
	// running as root must not read the environment or memory of yolop
	// and its helpers, which hold keys.
	if err := dropCaps(); err != nil {
		fmt.Fprintf(os.Stderr, "yolop sandbox: %v; the command did not run\n", err)
		return 126
	}
	path, err := exec.LookPath(os.Args[3])
	if err != nil {
		fmt.Fprintf(os.Stderr, "yolop sandbox: %v\n", err)
		return 127
	}
	err = syscall.Exec(path, os.Args[3:], os.Environ())
	fmt.Fprintf(os.Stderr, "yolop sandbox: exec %s: %v\n", path, err)
	return 126
}

// confine applies p to this process: the read-only paths, then Landlock.
// It returns the stage's exit code on failure, 0 on success.
func confine(p Policy) int {
	if len(p.ReadOnly) > 0 {
		// Before Landlock, which forbids mounting.
		if err := mountReadOnly(p.ReadOnly); err != nil {
			fmt.Fprintf(os.Stderr, "yolop sandbox: %v; the command did not run\n", err)
			return 126
		}
	}
	if err := applyPolicy(p); err != nil {
		fmt.Fprintf(os.Stderr, "yolop sandbox: %v; the command did not run\n", err)
		return 126
	}
	if len(p.ReadOnly) > 0 {
		if err := giveUpMountCaps(); err != nil {
			fmt.Fprintf(os.Stderr, "yolop sandbox: %v; the command did not run\n", err)
			return 126
		}
	}
	return 0
}
