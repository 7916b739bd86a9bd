package fsutil

import (
	"fmt"
	"path/filepath"
)

// SameDir reports whether a and b name the same existing file once every
// symlink in them is resolved (the last element too).
func SameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// SamePath reports whether a and b name the same file once the symlinks of
// their parent directories are resolved; the last element need not exist
// and is compared as it is (a worktree's .git file, an admin directory).
func SamePath(a, b string) bool {
	if a == b {
		return true
	}
	resolve := func(p string) (string, error) {
		d, err := filepath.EvalSymlinks(filepath.Dir(p))
		return filepath.Join(d, filepath.Base(p)), err
	}
	ra, err1 := resolve(a)
	rb, err2 := resolve(b)
	return err1 == nil && err2 == nil && ra == rb
}

// ResolveExisting resolves the symlinks of p's longest existing prefix
// and keeps the rest as it is (a data directory or a spill directory may
// not exist yet).
func ResolveExisting(p string) string {
	p = filepath.Clean(p)
	var rest []string
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		up := filepath.Dir(p)
		if up == p {
			return filepath.Join(append([]string{p}, rest...)...)
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = up
	}
}

// SizeText is n bytes for a person: "20.0 MB", "4 MB", "512 bytes".
func SizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
