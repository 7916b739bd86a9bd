//go:build !linux

package spawn

import "errors"

// ErrNoLandlock: the write sandbox needs Linux.
var errNoLandlock = errors.New("the sandbox needs Linux Landlock, which this system does not have")

func applyPolicy(Policy) error { return errNoLandlock }

// ABI is 0 off Linux.
func ABI() (int, error) { return 0, errNoLandlock }
