package tools

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
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
	var roDirs []string // read-only paths written to, in order
	roSeen := map[string]bool{}
	hit, gitRef := false, false
	for _, line := range strings.Split(out, "\n") {
		if netLine(line) {
			continue // a refused connection, see networkNote
		}
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
		ms := pathInLine.FindAllStringSubmatchIndex(line, -1)
		if len(ms) > 1 && ms[0][2] == 0 && strings.HasPrefix(line[ms[0][3]:], ": ") {
			// "/usr/bin/bash: line 1: /etc/x: Permission denied": the
			// first path is the program that reports, not the one refused.
			ms = ms[1:]
		}
		for _, mi := range ms {
			m := []string{line[mi[0]:mi[1]], line[mi[2]:mi[3]]}
			p := m[1]
			if strings.HasPrefix(p, "~/") {
				continue
			}
			if !filepath.IsAbs(p) {
				p = filepath.Join(root, p)
			}
			p = filepath.Clean(p)
			if d, ro := st.ReadOnlyAt(p); ro {
				if !roSeen[d] {
					roSeen[d] = true
					roDirs = append(roDirs, d)
				}
				continue
			}
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
	for _, d := range roDirs {
		b.WriteString(readOnlyNote(st, d))
	}
	if len(roDirs) > 0 && len(paths) == 0 && !gitRef {
		return b.String()
	}
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

// readOnlyNote explains a write refused because it was in a read-only
// path (sandbox.Layout.ReadOnly), the repository's .git above all.
func readOnlyNote(st sandbox.Status, dir string) string {
	if filepath.Base(dir) == ".git" {
		return fmt.Sprintf("note: the sandbox (level %s) refused a write in %s: the repository's .git is read-only for commands, because this session works in place, in the user's own checkout, and a rewind cannot undo a change to git's state (a commit, a branch, the index, the config, a hook). "+
			"Your file changes need no commit: yolop checkpoints them every turn, and committing is the user's to do (yolop commit, or their own git). "+
			"Leave out git commands that write (add, commit, stash, config, branch, checkout, reset); reading ones (status, diff, log, show) work. Do not work around it.\n", st.InForce, dir)
	}
	return fmt.Sprintf("note: the sandbox (level %s) refused a write in %s: it is read-only for commands in this session (a read-only mount): they may read it but not change it. Do not work around it; if the write is needed, tell the user.\n", st.InForce, dir)
}

// netFailures are the words of a failed outbound connection, as curl,
// wget, bash's /dev/tcp, Go, Python and Node report it (lower case).
var netFailures = []string{"failed to connect", "couldn't connect", "could not connect", "connection refused", "econnrefused", "network is unreachable", "connect: permission denied", "connect: operation not permitted", "dial tcp", "/dev/tcp/", "unable to connect", "connection failed", "failed to establish a new connection"}

// netLine reports whether an output line says a connection failed.
func netLine(line string) bool {
	l := strings.ToLower(line)
	for _, w := range netFailures {
		if strings.Contains(l, w) {
			return true
		}
	}
	return strings.Contains(l, "connect") && (strings.Contains(l, "permission denied") || strings.Contains(l, "eacces"))
}

// portInLine finds the TCP port a connection error names: curl's "port
// N", bash's /dev/tcp/HOST/N, and HOST:N in URLs and Go's dial errors.
var portInLine = regexp.MustCompile(`(?i)\bport (\d{1,5})\b|/dev/tcp/[^/\s]+/(\d{1,5})\b|[a-z0-9\].]:(\d{1,5})\b`)

// networkNote explains a connection the strict sandbox may have refused:
// at level strict, commands may connect only to the listed TCP ports, and
// a refusal looks exactly like a server that is down. "" when the output
// reports no failed connection, the level is not strict, or every port it
// names is allowed (then the failure is the server's or the network's).
func networkNote(out string, st sandbox.Status) string {
	if st.Policy == nil || st.InForce != sandbox.Strict {
		return ""
	}
	allowed := map[int]bool{}
	for _, p := range st.Ports {
		allowed[p] = true
	}
	hit := false
	seen := map[int]bool{}
	var ports []int
	named := false
	for _, line := range strings.Split(out, "\n") {
		if !netLine(line) {
			continue
		}
		hit = true
		for _, m := range portInLine.FindAllStringSubmatch(line, -1) {
			n := 0
			for _, g := range m[1:] {
				if g != "" {
					n, _ = strconv.Atoi(g)
				}
			}
			if n < 1 || n > 65535 {
				continue
			}
			named = true
			if !allowed[n] && !seen[n] {
				seen[n] = true
				ports = append(ports, n)
			}
		}
	}
	if !hit || (named && len(ports) == 0) {
		return ""
	}
	sort.Ints(ports)
	open := "commands may connect only to TCP ports " + joinInts(st.Ports)
	if len(st.Ports) == 0 {
		open = "no TCP port is open to commands ([sandbox] ports lists none)"
	}
	var b strings.Builder
	if len(ports) == 0 {
		fmt.Fprintf(&b, "note: the sandbox (level strict) may have refused this connection: ")
	} else {
		fmt.Fprintf(&b, "note: the sandbox (level strict) refused the TCP connection to port %s, not the server: ", joinInts(ports))
	}
	fmt.Fprintf(&b, "%s (a refused connection looks like a server that is down; do not debug the server for it). "+
		"Do not work around it; if the connection is needed, tell the user: they can open the port by adding it to [sandbox] ports in yolop's settings.toml (ports = [%d]), or run yolop with --sandbox write.\n", open, firstOr(ports, 443))
	return b.String()
}

// firstOr is ns[0], or d when ns is empty.
func firstOr(ns []int, d int) int {
	if len(ns) == 0 {
		return d
	}
	return ns[0]
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
