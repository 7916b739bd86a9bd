//go:build !linux

package spawn

// Seal does nothing off Linux, which has no PR_SET_DUMPABLE.
func Seal() error { return nil }

func dropCaps() error { return nil }
