package spawn

import (
	"fmt"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// writeDirRights are the rights a writable directory grants: everything
// that creates, changes, renames or removes a file (Landlock ABI 3).
// Reading and executing are not handled, so they stay allowed everywhere.
const writeDirRights = landlock.AccessFSSet(ll.AccessFSWriteFile | ll.AccessFSTruncate |
	ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir |
	ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock |
	ll.AccessFSMakeSym | ll.AccessFSRefer)

// writeFileRights are those that apply to a single file (a device).
const writeFileRights = landlock.AccessFSSet(ll.AccessFSWriteFile | ll.AccessFSTruncate)

// ABI is the kernel's Landlock ABI version, 0 when Landlock is missing or
// disabled.
func ABI() (int, error) {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0, err
	}
	return v, nil
}

// applyPolicy confines this process (and everything it executes) to p. It
// never falls back to a weaker ABI: a kernel below p.MinABI is an error.
func applyPolicy(p Policy) error {
	abi, err := ABI()
	if err != nil {
		return fmt.Errorf("landlock is not available: %w", err)
	}
	if abi < p.MinABI {
		return fmt.Errorf("sandbox level %s needs Landlock ABI %d, the kernel has %d", p.Level, p.MinABI, abi)
	}
	cfg := landlock.Config{HandledAccessFS: writeDirRights}
	if p.Level == LevelStrict {
		cfg.HandledAccessNet = landlock.AccessNetSet(ll.AccessNetConnectTCP)
	}
	var rules []landlock.Rule
	var dirs, files []string
	for _, d := range p.WriteDirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			dirs = append(dirs, d)
		}
	}
	for _, f := range p.WriteFiles {
		if st, err := os.Stat(f); err == nil && !st.IsDir() {
			files = append(files, f)
		}
	}
	if len(dirs) > 0 {
		rules = append(rules, landlock.PathAccess(writeDirRights, dirs...))
	}
	if len(files) > 0 {
		rules = append(rules, landlock.PathAccess(writeFileRights, files...))
	}
	for _, port := range p.Ports {
		rules = append(rules, landlock.ConnectTCP(port))
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("apply landlock rules: %w", err)
	}
	return nil
}
