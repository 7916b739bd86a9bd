//go:build unix && !linux

package tools

// walkFlags open a directory the walk only passes through.
const walkFlags = dirFlags

// sysOpenat2 is nil: without openat2 every open walks the path one
// O_NOFOLLOW component at a time.
var sysOpenat2 func(dirfd int, path string) (int, error)
