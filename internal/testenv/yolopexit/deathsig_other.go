//go:build !linux

package main

import "syscall"

// diesWithParent asks for nothing where the kernel has no parent-death
// signal: there a script that kills this process leaves yolop to end by
// itself.
func diesWithParent() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
