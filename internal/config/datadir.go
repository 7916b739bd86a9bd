package config

import (
	"fmt"
	"os"
	"path/filepath"
)

// DataDir resolves yolop's data directory: the flag, then $YOLOP_DATA_DIR,
// then $XDG_DATA_HOME/yolop, then ~/.local/share/yolop. The result is
// absolute. The directory is not created.
func DataDir(flag string) (string, error) {
	for _, v := range []string{flag, os.Getenv("YOLOP_DATA_DIR")} {
		if v != "" {
			abs, err := filepath.Abs(v)
			if err != nil {
				return "", fmt.Errorf("data dir %q: %w", v, err)
			}
			return abs, nil
		}
	}
	// The XDG spec says a relative XDG_DATA_HOME is invalid and must be
	// ignored.
	if x := os.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "yolop"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", fmt.Errorf("data dir: no home directory (%v); pass --data-dir or set YOLOP_DATA_DIR", err)
	}
	return filepath.Join(home, ".local", "share", "yolop"), nil
}

// ResolveDataDir is DataDir with a note for the user when the directory
// came from a relative --data-dir or YOLOP_DATA_DIR ("" otherwise): a
// relative path is resolved against the current directory, so the same
// flag names another directory elsewhere.
func ResolveDataDir(flag string) (dir, note string, err error) {
	dir, err = DataDir(flag)
	if err != nil {
		return "", "", err
	}
	from, raw := "--data-dir", flag
	if raw == "" {
		from, raw = "YOLOP_DATA_DIR", os.Getenv("YOLOP_DATA_DIR")
	}
	if raw != "" && !filepath.IsAbs(raw) {
		note = fmt.Sprintf("data directory %s (%s %s, relative to the current directory)", dir, from, raw)
	}
	return dir, note, nil
}

// WorkDir is the directory a command works in: dir (-C), or the current
// directory when dir is "", absolute and with its symlinks resolved, so a
// folder reached through a symlink is the same folder (git resolves a
// checkout's top level the same way).
func WorkDir(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}
