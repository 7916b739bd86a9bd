package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"
)

const (
	// grepMaxMatches bounds the matching lines one grep call returns.
	grepMaxMatches = 500
	// grepMaxLine cuts very long matching lines (minified code).
	grepMaxLine = 300
	// grepMaxFileSize skips files too large to be source code.
	grepMaxFileSize = 16 << 20
)

type grepTool struct{ s *Set }

func (*grepTool) Kind() string { return KindSearch }

func (*grepTool) Spec() Spec {
	return Spec{
		Name: "grep",
		Description: "Search file contents with a regular expression (RE2 syntax, as in Go; no lookaround or backreferences). " +
			"Prints matching lines as 'path:line: text'. Searches the project root, or the file or directory given in path. " +
			".git and write-blocklisted directories (" + strings.Join(Blocklist, ", ") + ") are skipped unless path points into one; " +
			"binary files are skipped. glob filters file names, e.g. \"*.go\", \"*.{ts,tsx}\" or \"src/**/*.py\". Output is capped; narrow the search when it is cut.",
		Parameters: mustSchema(`{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"Regular expression (RE2). Use (?i) for case-insensitive matching."},` +
			`"path":{"type":"string","description":"File or directory to search, relative to the project root. Default: the whole root."},` +
			`"glob":{"type":"string","description":"Only search files whose name (or, if the glob has a '/', whose root-relative path) matches."}` +
			`},"required":["pattern"],"additionalProperties":false}`),
	}
}

func (t *grepTool) Run(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a struct {
		Pattern string `json:"pattern"`
		Path    string `json:"path"`
		Glob    string `json:"glob"`
	}
	if r := decodeArgs("grep", raw, &a); r != nil {
		return *r, nil
	}
	if a.Pattern == "" {
		return errResult("grep needs a non-empty pattern"), nil
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return errResult("pattern is not a valid RE2 regular expression: %v", strings.TrimPrefix(err.Error(), "error parsing regexp: ")), nil
	}
	var globs []string
	if a.Glob != "" {
		globs = expandBraces(strings.TrimPrefix(a.Glob, "./"))
		for _, g := range globs {
			if _, err := path.Match(strings.ReplaceAll(g, "**", "*"), ""); err != nil {
				return errResult("glob %q is malformed: %v", a.Glob, err), nil
			}
		}
	}
	p, fi, res, err := t.s.statForRead("grep", a.Path, "grep")
	if res != nil {
		return *res, err
	}
	defer p.Close()
	g := &grepRun{re: re, globs: globs, cap: t.s.env.OutputCap}
	if fi.IsDir() {
		err = g.walk(ctx, p.dir, p.Rel) // statForRead holds the directory itself open
	} else {
		// An explicit file is searched even if the glob would not match it.
		err = g.file(p.dir, p.name, p.Rel)
	}
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{}, err
	}
	disp := &Display{Kind: KindSearch, Title: "grep " + a.Pattern}
	if g.matches == 0 {
		msg := fmt.Sprintf("no matches for %s in %s", a.Pattern, p.Asked)
		if a.Glob != "" {
			msg += fmt.Sprintf(" (files matching %s)", a.Glob)
		}
		return Result{Content: msg + g.skippedNote(), Display: disp}, nil
	}
	out := g.out.String()
	if g.truncated {
		out += fmt.Sprintf("[output cut after %d matches; there are more. Narrow the pattern, path or glob]\n", g.matches)
	}
	return Result{Content: out + g.skippedNote(), Display: disp}, nil
}

type grepRun struct {
	re        *regexp.Regexp
	globs     []string
	cap       int
	out       bytes.Buffer
	matches   int
	truncated bool
	large     int // files skipped for size
}

var errGrepFull = errors.New("grep output full")

func (g *grepRun) skippedNote() string {
	if g.large == 0 {
		return ""
	}
	return fmt.Sprintf("\n[%d files larger than %d MiB were not searched]", g.large, grepMaxFileSize>>20)
}

// walk searches the tree of the open directory d (at rel), in name order,
// skipping .git and blocklisted directories below it. Every directory and
// file is opened through its parent's descriptor without following a
// symlink, so the search never leaves d, whatever is swapped meanwhile;
// symlinks are not searched.
func (g *grepRun) walk(ctx context.Context, d *os.File, rel string) error {
	err := g.walkDir(ctx, d, rel)
	if errors.Is(err, errGrepFull) {
		return nil
	}
	return err
}

func (g *grepRun) walkDir(ctx context.Context, d *os.File, rel string) error {
	entries, err := readDirSorted(d)
	if err != nil {
		return nil // unreadable directories are skipped, as grep -r does
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		child := path.Join(rel, e.Name())
		switch {
		case e.IsDir():
			if _, blocked := Blocked(e.Name()); blocked {
				continue
			}
			sub, err := openAt(d, e.Name(), unix.O_RDONLY|unix.O_DIRECTORY, filepath.Join(d.Name(), e.Name()))
			if err != nil {
				continue
			}
			err = g.walkDir(ctx, sub, child)
			sub.Close()
			if err != nil {
				return err
			}
		case e.Type().IsRegular():
			if len(g.globs) > 0 && !globMatch(g.globs, child) {
				continue
			}
			if err := g.file(d, e.Name(), child); err != nil {
				return err
			}
		}
	}
	return nil
}

// file searches the file name of the open directory dir. Binary files (a
// NUL in the first 8000 bytes), huge files and anything but a regular file
// are skipped.
func (g *grepRun) file(dir *os.File, name, rel string) error {
	f, err := openAt(dir, name, unix.O_RDONLY|unix.O_NONBLOCK, filepath.Join(dir.Name(), name))
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	if fi.Size() > grepMaxFileSize {
		g.large++
		return nil
	}
	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(sniffLen); bytes.IndexByte(head, 0) >= 0 {
		return nil
	}
	lineNo := 0
	for {
		line, err := br.ReadSlice('\n')
		long := errors.Is(err, bufio.ErrBufferFull)
		if len(line) > 0 {
			lineNo++
			text := bytes.TrimRight(line, "\r\n")
			if g.re.Match(text) {
				if rerr := g.emit(rel, lineNo, text); rerr != nil {
					return rerr
				}
			}
		}
		// A line longer than the buffer is matched on its first 64 KiB
		// only; skip its remainder.
		for long {
			_, err = br.ReadSlice('\n')
			long = errors.Is(err, bufio.ErrBufferFull)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return nil // unreadable mid-way: report what was found
		}
	}
}

func (g *grepRun) emit(rel string, lineNo int, text []byte) error {
	if g.matches >= grepMaxMatches {
		g.truncated = true
		return errGrepFull
	}
	suffix := ""
	if len(text) > grepMaxLine {
		text, suffix = text[:grepMaxLine], " [line cut]"
	}
	line := fmt.Sprintf("%s:%d: %s%s\n", rel, lineNo, text, suffix)
	if g.out.Len()+len(line) > g.cap {
		g.truncated = true
		return errGrepFull
	}
	g.out.WriteString(line)
	g.matches++
	return nil
}

// globMatch matches a root-relative slash path against globs: a glob without
// '/' matches the base name; one with '/' matches the whole path, where "**"
// spans any number of directories.
func globMatch(globs []string, rel string) bool {
	for _, g := range globs {
		if !strings.Contains(g, "/") {
			if ok, _ := path.Match(g, path.Base(rel)); ok {
				return true
			}
			continue
		}
		if matchSegments(strings.Split(g, "/"), strings.Split(rel, "/")) {
			return true
		}
	}
	return false
}

func matchSegments(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchSegments(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// expandBraces expands "{a,b}" alternatives (also nested or repeated), as
// shells do: "*.{ts,tsx}" becomes "*.ts" and "*.tsx".
func expandBraces(g string) []string {
	open := strings.IndexByte(g, '{')
	if open < 0 {
		return []string{g}
	}
	depth, closeAt := 0, -1
	var commas []int
	for i := open; i < len(g) && closeAt < 0; i++ {
		switch g[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				closeAt = i
			}
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		}
	}
	if closeAt < 0 || len(commas) == 0 {
		return []string{g} // not an alternative: leave it literal
	}
	var out []string
	prev := open + 1
	for _, c := range append(commas, closeAt) {
		for _, rest := range expandBraces(g[prev:c] + g[closeAt+1:]) {
			out = append(out, g[:open]+rest)
		}
		prev = c + 1
	}
	return out
}
