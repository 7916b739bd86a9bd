package git

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// ConfigValues reads keys ("core.autocrlf": lowercase, as git lists them)
// of the repository r runs in, in one `git config` process, each value
// read as a path (~ expanded; other values stay as they are). A key set
// more than once has its last value, as git reads it; a key not set is
// missing from the map.
func ConfigValues(ctx context.Context, r *Runner, keys ...string) (map[string]string, error) {
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = regexp.QuoteMeta(k)
	}
	out, err := r.Run(ctx, "config", "-z", "--type=path", "--get-regexp", "^("+strings.Join(quoted, "|")+")$")
	vals := map[string]string{}
	var ge *Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return vals, nil // none is set
	}
	if err != nil {
		return nil, err
	}
	for _, kv := range SplitZ(out) {
		if k, v, ok := strings.Cut(kv, "\n"); ok {
			vals[k] = v
		}
	}
	return vals, nil
}

// ConvertsOutsideTree reports whether settings outside a work tree may make
// git convert content between the disk and the object store: core.autocrlf
// set to anything but false, or a non-empty attributes file: attributesFile
// (core.attributesFile; "" for git's default, $XDG_CONFIG_HOME/git/attributes
// or ~/.config/git/attributes) or infoAttributes (the repository's
// info/attributes). A tracked .gitattributes is for the caller to find.
func ConvertsOutsideTree(autocrlf, attributesFile, infoAttributes string) bool {
	if v := strings.ToLower(autocrlf); v != "" && v != "false" {
		return true
	}
	if attributesFile == "" {
		attributesFile = defaultAttributesFile()
	}
	return nonEmpty(attributesFile) || nonEmpty(infoAttributes)
}

func defaultAttributesFile() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "git", "attributes")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".config", "git", "attributes")
	}
	return ""
}

func nonEmpty(path string) bool {
	if path == "" {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && st.Size() > 0
}
