package tools

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/yolop-dev/yolop/internal/sandbox"
)

// denied are the error texts a write refused by Landlock produces.
var denied = []string{"Permission denied", "Operation not permitted", "Read-only file system", "EACCES", "EPERM"}

// gitRefusals are git's own words for a write of a ref the sandbox
// refused when git names no path (git stash cannot write refs/stash).
var gitRefusals = []string{"Cannot save the current status"}

// gitAdvice explains which of the repository's refs a command may write.
const gitAdvice = "git may write the session's branch and other branches named yolop/… (with the objects they need), but no other ref of the user's repository: not refs/stash (so `git stash` fails), tags, other branches or the user's HEAD, because a rewind cannot undo those. Keep the work on the session's branch instead: every turn's files are already checkpointed, so stashing is never needed. Do not work around it; if the write is really needed, tell the user: they can run yolop with --sandbox off.\n"

// pathInLine finds path-looking words in an error line.
var pathInLine = regexp.MustCompile(`(?:^|[\s'"‘’“”(:=])((?:/|\./|\.\./|~/)?[A-Za-z0-9._@+\-]+(?:/[A-Za-z0-9._@+\-]+)+/?|/[A-Za-z0-9._@+\-]+)`)

// sandboxNote explains a write the sandbox refused: which path, why, and
// how the user can allow it. It looks at the lines of out that report a
// permission error and names the paths in them that lie outside the places
// commands may write; "" when there is none (or no sandbox).
func sandboxNote(out string, st sandbox.Status, root string) string {
	if st.Policy == nil {
		return ""
	}
	seen := map[string]bool{}
	var paths []string
	hit, gitRef := false, false
	for _, line := range strings.Split(out, "\n") {
		bad := false
		for _, d := range denied {
			if strings.Contains(line, d) {
				bad = true
				break
			}
		}
		for _, g := range gitRefusals {
			if strings.Contains(line, g) {
				bad, gitRef = true, true
			}
		}
		if !bad {
			continue
		}
		hit = true
		for _, m := range pathInLine.FindAllStringSubmatch(line, -1) {
			p := m[1]
			if strings.HasPrefix(p, "~/") {
				continue
			}
			if !filepath.IsAbs(p) {
				p = filepath.Join(root, p)
			}
			p = filepath.Clean(p)
			if !st.Allowed(p) && !seen[p] {
				seen[p] = true
				paths = append(paths, p)
				if strings.Contains(p, "/.git/") {
					gitRef = true
				}
			}
		}
	}
	if !hit {
		return ""
	}
	sort.Strings(paths)
	var b strings.Builder
	if gitRef {
		if len(paths) == 0 {
			fmt.Fprintf(&b, "note: the sandbox (level %s) refused a write of git's: ", st.InForce)
		} else {
			fmt.Fprintf(&b, "note: the sandbox (level %s) refused writing %s: ", st.InForce, strings.Join(paths, ", "))
		}
		b.WriteString(gitAdvice)
		return b.String()
	}
	if len(paths) == 0 {
		fmt.Fprintf(&b, "note: the sandbox (level %s) may have refused a write: ", st.InForce)
	} else {
		fmt.Fprintf(&b, "note: the sandbox (level %s) refused writing %s: ", st.InForce, strings.Join(paths, ", "))
	}
	b.WriteString("commands may write only the workspace (" + root + " and below), $TMPDIR, the standard devices and the declared caches, " +
		"because a rewind cannot undo changes anywhere else. Do not work around it; if the write is needed, tell the user: " +
		"they can add the directory to [sandbox] extra_caches in yolop's settings.toml, or run yolop with --sandbox off.\n")
	return b.String()
}
