//go:build !linux

package spawn

import (
	"errors"
	"syscall"
)

var errNoMountNS = errors.New("read-only paths need Linux mount namespaces, which this system does not have")

func stageAttr(*Policy) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func mountReadOnly([]string) error { return errNoMountNS }

func giveUpMountCaps() error { return nil }

// ProbeArg as the first argument makes Main try read-only paths (Linux).
const ProbeArg = "__yolop-sandbox-probe"

// ReadOnlyAvailable reports why commands cannot get read-only paths here.
func ReadOnlyAvailable() error { return errNoMountNS }

// CacheProbe does nothing: there is no probe to keep.
func CacheProbe(string) {}

func probeMain() int { return 1 }
