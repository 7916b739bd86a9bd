//go:build !linux

package spawn

import "syscall"

// BootID is unknown off Linux.
func BootID() string { return "" }

// Identify records only the pid off Linux (no start times to compare).
func Identify(pid int) (Record, error) { return Record{PID: pid}, nil }

// Alive reports whether a process with r's pid exists; off Linux a reused
// pid cannot be told apart.
func Alive(r Record) bool { return r.PID > 0 && syscall.Kill(r.PID, 0) == nil }

// childrenOf finds nothing off Linux (no /proc).
func childrenOf(int) []int { return nil }

func cmdline(int) string { return "" }
