package main

import "syscall"

// diesWithParent makes a script that kills this process kill yolop with
// it, as it would kill yolop itself.
func diesWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
