package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/yolop-dev/yolop/internal/fsutil"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

const (
	// DefaultReadLines is how many lines read_file returns without a limit.
	DefaultReadLines = 2000
	// readByteCap bounds what one read_file call returns, whatever the limit.
	readByteCap = 64 << 10
	// sniffLen is how much of a file is checked for NUL bytes, as git does.
	sniffLen = 8000
	// displayCap bounds the file text copied into Display for hosts.
	displayCap = 1 << 20
	// listCap bounds the entries list_directory returns.
	listCap = 1000
)

// ---- read_file

type readFile struct{ s *Set }

func (*readFile) Kind() string { return KindRead }

func (*readFile) Spec() Spec {
	return Spec{
		Name: "read_file",
		Description: "Read a text file in the project. Paths are relative to the project root. " +
			"Returns the file's exact content (no line numbers), so text can be copied into edit_file as is. " +
			fmt.Sprintf("Large files are cut after %d lines or %d KiB; a header then says which lines are shown and the offset to continue from. ", DefaultReadLines, readByteCap>>10) +
			"Binary files are refused.",
		Parameters: mustSchema(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"File path relative to the project root."},` +
			`"offset":{"type":"integer","minimum":1,"description":"First line to return, 1-based. Default 1."},` +
			`"limit":{"type":"integer","minimum":1,"description":"Maximum number of lines to return. Default 2000."}` +
			`},"required":["path"],"additionalProperties":false}`),
	}
}

func (t *readFile) Run(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a struct {
		Path   string `json:"path"`
		Offset *int   `json:"offset"`
		Limit  *int   `json:"limit"`
	}
	if r := decodeArgs("read_file", raw, &a); r != nil {
		return *r, nil
	}
	offset, limit := 1, DefaultReadLines
	if a.Offset != nil {
		if *a.Offset < 1 {
			return errResult("offset must be 1 or more (it is a 1-based line number), got %d", *a.Offset), nil
		}
		offset = *a.Offset
	}
	if a.Limit != nil {
		if *a.Limit < 1 {
			return errResult("limit must be 1 or more, got %d", *a.Limit), nil
		}
		limit = *a.Limit
	}
	p, err := t.s.openForRead(a.Path)
	if err != nil {
		return openFailed(p, err, "read", "%s does not exist; check the path with list_directory")
	}
	defer p.Close()
	t.s.afterResolve("read_file", p.Rel)
	f, fi, res, err := openRegular(p)
	if f == nil {
		return res, err
	}
	defer f.Close()
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return Result{}, fmt.Errorf("read %s: %w", p.Abs, err)
	}
	disp := &Display{Kind: KindRead, Path: p.Rel, Title: "read " + p.Rel}
	if bytes.IndexByte(head[:n], 0) >= 0 {
		return Result{Content: fmt.Sprintf("%s is a binary file, %d bytes; read_file shows text only. Inspect it with bash (e.g. `file %s` or `xxd %s | head`).", p.Asked, fi.Size(), p.Asked, p.Asked), IsError: true, Display: disp}, nil
	}
	if fi.Size() == 0 {
		return Result{Content: fmt.Sprintf("(%s is empty: 0 bytes)", p.Asked), Display: disp}, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Result{}, fmt.Errorf("read %s: %w", p.Abs, err)
	}
	out, err := readWindow(ctx, f, offset, limit, readByteCap)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", p.Abs, err)
	}
	if offset > out.total {
		return errResult("offset %d is past the end of %s, which has %d lines", offset, p.Asked, out.total), nil
	}
	if out.first == 1 && out.last == out.total && !out.cutLine {
		return Result{Content: out.text, Display: disp}, nil
	}
	var hdr strings.Builder
	fmt.Fprintf(&hdr, "[%s: showing lines %d-%d of %d", p.Asked, out.first, out.last, out.total)
	if out.cutLine {
		fmt.Fprintf(&hdr, "; line %d is longer than %d KiB and was cut", out.last, readByteCap>>10)
	}
	if out.last < out.total {
		fmt.Fprintf(&hdr, "; to read more call read_file with offset=%d", out.last+1)
	}
	hdr.WriteString("]\n")
	return Result{Content: hdr.String() + out.text, Display: disp}, nil
}

type window struct {
	text        string
	first, last int // 1-based inclusive line numbers shown
	total       int
	cutLine     bool // the only line shown was longer than the byte cap
}

// readWindow returns lines [offset, offset+limit) of r, at most byteCap bytes
// of them, and counts every line of r. Memory stays bounded by byteCap plus
// the reader's buffer however long the lines are.
func readWindow(ctx context.Context, r io.Reader, offset, limit, byteCap int) (window, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf bytes.Buffer
	w := window{first: offset}
	atLineStart := true
	keeping := false // the current line is being collected
	full := false    // the window is complete; only count from now on
	lineStart := 0   // offset in buf where the current line begins
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if atLineStart {
				atLineStart = false
				w.total++
				if w.total%65536 == 0 && ctx.Err() != nil {
					return w, ctx.Err()
				}
				keeping = false
				if !full && w.total >= offset {
					if w.total-offset >= limit {
						full = true
					} else {
						keeping, lineStart = true, buf.Len()
					}
				}
			}
			if keeping {
				switch {
				case buf.Len()+len(chunk) <= byteCap:
					buf.Write(chunk)
				case lineStart == 0:
					// One line larger than the whole cap: show its start
					// rather than nothing.
					buf.Write(chunk[:byteCap-buf.Len()])
					w.cutLine, w.last = true, w.total
					keeping, full = false, true
				default:
					// Drop the partial line so the text ends on a line
					// boundary and the next offset is exact.
					buf.Truncate(lineStart)
					keeping, full = false, true
				}
			}
			if chunk[len(chunk)-1] == '\n' {
				if keeping {
					w.last = w.total
				}
				atLineStart = true
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			if keeping && !atLineStart {
				w.last = w.total // a last line without a newline
			}
			break
		}
		if err != nil {
			return w, err
		}
	}
	w.text = buf.String()
	return w, nil
}

// openRegular opens a target for reading. It refuses directories and
// special files before opening them (opening a named pipe would block,
// a device could act), opens without following a symlink, and checks the
// file it opened again: whatever was swapped in meanwhile is refused. When
// it returns a nil file, the Result and error are the call's answer.
func openRegular(p *target) (*os.File, fs.FileInfo, Result, error) {
	fi, err := p.lstat()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, errResult("%s does not exist; check the path with list_directory", p.Asked), nil
	}
	if err != nil {
		r, e := fsResult("read "+p.Asked, err)
		return nil, nil, r, e
	}
	if r, bad := notRegular(p, fi); bad {
		return nil, nil, r, nil
	}
	f, err := p.openFile(unix.O_RDONLY | unix.O_NONBLOCK)
	if errors.Is(err, unix.ELOOP) {
		return nil, nil, changedErr(p.Asked), nil
	}
	if err != nil {
		r, e := fsResult("read "+p.Asked, err)
		return nil, nil, r, e
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, Result{}, fmt.Errorf("read %s: %w", p.Abs, err)
	}
	if r, bad := notRegular(p, fi); bad {
		f.Close()
		return nil, nil, r, nil
	}
	return f, fi, Result{}, nil
}

// notRegular is the answer for a target that is not a regular file.
func notRegular(p *target, fi fs.FileInfo) (Result, bool) {
	switch {
	case fi.IsDir():
		return errResult("%s is a directory; use list_directory to see its entries", p.Asked), true
	case fi.Mode()&fs.ModeSymlink != 0:
		return changedErr(p.Asked), true
	case !fi.Mode().IsRegular():
		return errResult("%s is not a regular file (%s); the file tools only handle regular files", p.Asked, fi.Mode().Type()), true
	}
	return Result{}, false
}

// openFailed is a tool's answer when its path could not be opened: the
// refusal, missing's message (with the path) when a directory on the path
// does not exist, or the filesystem's error.
func openFailed(p *target, err error, verb, missing string) (Result, error) {
	var pe *pathError
	if errors.As(err, &pe) {
		return pathResult(err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return errResult(missing, p.Asked), nil
	}
	var fe *fs.PathError
	if errors.As(err, &fe) && fe.Op == "mkdir" {
		verb = "create parent directories of"
	}
	return fsResult(verb+" "+p.Asked, err)
}

// fsResult maps a filesystem error: permission and name problems are the
// model's to fix; anything else (I/O errors, a full disk) is infrastructure.
func fsResult(what string, err error) (Result, error) {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return errResult("%s: permission denied", what), nil
	case errors.Is(err, syscall.ENOTDIR):
		return errResult("%s: a parent of this path is a file, not a directory", what), nil
	case errors.Is(err, syscall.ENAMETOOLONG):
		return errResult("%s: file name too long", what), nil
	case errors.Is(err, syscall.EISDIR):
		return errResult("%s: is a directory", what), nil
	case errors.Is(err, syscall.EROFS):
		return errResult("%s: read-only file system", what), nil
	}
	return Result{}, fmt.Errorf("%s: %w", what, err)
}

// ---- write_file

type writeFile struct{ s *Set }

func (*writeFile) Kind() string { return KindEdit }

func (*writeFile) Spec() Spec {
	return Spec{
		Name: "write_file",
		Description: "Create a file or replace its whole content. Parent directories are created. " +
			"An existing file keeps its permissions. Prefer edit_file for changing part of a file. " +
			"Writes into write-blocklisted directories (" + strings.Join(Blocklist, ", ") + ") are refused because checkpoints cannot rewind them.",
		Parameters: mustSchema(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"File path relative to the project root."},` +
			`"content":{"type":"string","description":"The complete new content of the file."}` +
			`},"required":["path","content"],"additionalProperties":false}`),
	}
}

func (t *writeFile) Run(_ context.Context, raw json.RawMessage) (Result, error) {
	var a struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
	}
	if r := decodeArgs("write_file", raw, &a); r != nil {
		return *r, nil
	}
	if a.Content == nil {
		return errResult("write_file needs content (use \"\" for an empty file)"), nil
	}
	p, err := t.s.openForWrite(a.Path, true, true)
	if err != nil {
		return openFailed(p, err, "write", "%s: a parent directory vanished while it was being made; nothing was written")
	}
	defer p.Close()
	t.s.afterResolve("write_file", p.Rel)
	mode := fs.FileMode(0o644)
	var old *string
	existed := false
	fi, err := p.lstat()
	switch {
	case err == nil && fi.IsDir():
		return errResult("%s is a directory; write_file writes files", p.Asked), nil
	case err == nil && !fi.Mode().IsRegular():
		return errResult("%s is not a regular file (%s); delete it first if it should become a file", p.Asked, fi.Mode().Type()), nil
	case err == nil:
		existed = true
		mode = fi.Mode().Perm()
		old = displayText(p, fi.Size())
	case errors.Is(err, fs.ErrNotExist):
	default:
		return fsResult("write "+p.Asked, err)
	}
	if err := fsutil.WriteFileAtomicAt(p.dir, p.name, []byte(*a.Content), mode); err != nil {
		return fsResult("write "+p.Asked, err)
	}
	verb := "created"
	if existed {
		verb = "overwrote"
	}
	var newText *string
	if len(*a.Content) <= displayCap {
		newText = a.Content
	}
	return Result{
		Content: fmt.Sprintf("%s %s (%d bytes)", verb, p.Rel, len(*a.Content)),
		Display: &Display{Kind: KindEdit, Path: p.Rel, Title: "write " + p.Rel, OldText: old, NewText: newText},
	}, nil
}

// displayText returns a file's text for Display, or nil when it is too big,
// binary or no longer a regular file.
func displayText(p *target, size int64) *string {
	if size > displayCap {
		return nil
	}
	f, err := p.openFile(unix.O_RDONLY | unix.O_NONBLOCK)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, displayCap+1))
	if err != nil || len(b) > displayCap || bytes.IndexByte(b[:min(len(b), sniffLen)], 0) >= 0 {
		return nil
	}
	return strPtr(string(b))
}

// ---- edit_file

type editFile struct{ s *Set }

func (*editFile) Kind() string { return KindEdit }

func (*editFile) Spec() Spec {
	return Spec{
		Name: "edit_file",
		Description: "Replace exact text in a file. old_text must match the file byte for byte (whitespace and indentation included) " +
			"and, unless replace_all is true, exactly once: include enough surrounding lines to make it unique. " +
			"Read the file first. To create a file or replace all of it use write_file.",
		Parameters: mustSchema(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"File path relative to the project root."},` +
			`"old_text":{"type":"string","description":"The exact text to replace."},` +
			`"new_text":{"type":"string","description":"The replacement text."},` +
			`"replace_all":{"type":"boolean","description":"Replace every occurrence instead of requiring exactly one. Default false."}` +
			`},"required":["path","old_text","new_text"],"additionalProperties":false}`),
	}
}

func (t *editFile) Run(_ context.Context, raw json.RawMessage) (Result, error) {
	var a struct {
		Path       string  `json:"path"`
		OldText    *string `json:"old_text"`
		NewText    *string `json:"new_text"`
		ReplaceAll bool    `json:"replace_all"`
	}
	if r := decodeArgs("edit_file", raw, &a); r != nil {
		return *r, nil
	}
	if a.OldText == nil || a.NewText == nil {
		return errResult("edit_file needs old_text and new_text"), nil
	}
	if *a.OldText == "" {
		return errResult("old_text is empty; give the exact text to replace, or use write_file to create or overwrite a file"), nil
	}
	if *a.OldText == *a.NewText {
		return errResult("old_text and new_text are identical; nothing would change"), nil
	}
	p, err := t.s.openForWrite(a.Path, true, false)
	if err != nil {
		return openFailed(p, err, "edit", "%s does not exist; use write_file to create it")
	}
	defer p.Close()
	t.s.afterResolve("edit_file", p.Rel)
	if _, err := p.lstat(); errors.Is(err, fs.ErrNotExist) {
		return errResult("%s does not exist; use write_file to create it", p.Asked), nil
	}
	f, fi, res, err := openRegular(p)
	if f == nil {
		return res, err
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", p.Abs, err)
	}
	content := string(data)
	n := strings.Count(content, *a.OldText)
	switch {
	case n == 0:
		return errResult("old_text was not found in %s%s; read the file again and copy the text exactly", p.Asked, editHint(content, *a.OldText)), nil
	case n > 1 && !a.ReplaceAll:
		return errResult("old_text matches %d places in %s; include more surrounding lines so it matches exactly one, or set replace_all to true to replace all %d", n, p.Asked, n), nil
	}
	var updated string
	if a.ReplaceAll {
		updated = strings.ReplaceAll(content, *a.OldText, *a.NewText)
	} else {
		updated = strings.Replace(content, *a.OldText, *a.NewText, 1)
	}
	if err := fsutil.WriteFileAtomicAt(p.dir, p.name, []byte(updated), fi.Mode().Perm()); err != nil {
		return fsResult("write "+p.Asked, err)
	}
	disp := &Display{Kind: KindEdit, Path: p.Rel, Title: "edit " + p.Rel}
	if len(data) <= displayCap && len(updated) <= displayCap {
		disp.OldText, disp.NewText = strPtr(content), strPtr(updated)
	}
	word := "occurrence"
	if n > 1 {
		word = "occurrences"
	}
	return Result{Content: fmt.Sprintf("replaced %d %s in %s", n, word, p.Rel), Display: disp}, nil
}

// editHint explains the usual reasons exact text is not found.
func editHint(content, old string) string {
	switch {
	case strings.Contains(content, "\r\n") && !strings.Contains(old, "\r") &&
		strings.Contains(content, strings.ReplaceAll(old, "\n", "\r\n")):
		return " (the file uses CRLF line endings; old_text must contain \\r\\n too)"
	case strings.TrimSpace(old) != "" && strings.Contains(content, strings.TrimSpace(old)):
		return " (it does occur with different leading or trailing whitespace)"
	}
	return ""
}

// ---- delete_file

type deleteFile struct{ s *Set }

func (*deleteFile) Kind() string { return KindDelete }

func (*deleteFile) Spec() Spec {
	return Spec{
		Name: "delete_file",
		Description: "Delete a file, a symlink (the link itself, not its target) or an empty directory. " +
			"Non-empty directories are refused: delete their files first. " +
			"Deletions in write-blocklisted directories (" + strings.Join(Blocklist, ", ") + ") are refused.",
		Parameters: mustSchema(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"Path relative to the project root."}` +
			`},"required":["path"],"additionalProperties":false}`),
	}
}

func (t *deleteFile) Run(_ context.Context, raw json.RawMessage) (Result, error) {
	var a struct {
		Path string `json:"path"`
	}
	if r := decodeArgs("delete_file", raw, &a); r != nil {
		return *r, nil
	}
	p, err := t.s.openForWrite(a.Path, false, false)
	if err != nil {
		return openFailed(p, err, "delete", "%s does not exist; nothing was deleted")
	}
	defer p.Close()
	t.s.afterResolve("delete_file", p.Rel)
	fi, err := p.lstat()
	if errors.Is(err, fs.ErrNotExist) {
		return errResult("%s does not exist; nothing was deleted", p.Asked), nil
	}
	if err != nil {
		return fsResult("delete "+p.Asked, err)
	}
	disp := &Display{Kind: KindDelete, Path: p.Rel, Title: "delete " + p.Rel}
	what := "file"
	switch {
	case fi.IsDir():
		what = "empty directory"
	case fi.Mode()&fs.ModeSymlink != 0:
		what = "symlink"
	case fi.Mode().IsRegular():
		disp.OldText = displayText(p, fi.Size())
	}
	if err := p.remove(); err != nil {
		if fi.IsDir() && (errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)) {
			return errResult("%s is a directory that is not empty; delete its files first (list_directory shows them)", p.Asked), nil
		}
		return fsResult("delete "+p.Asked, err)
	}
	return Result{Content: fmt.Sprintf("deleted %s %s", what, p.Rel), Display: disp}, nil
}

// ---- list_directory

type listDirectory struct{ s *Set }

func (*listDirectory) Kind() string { return KindRead }

func (*listDirectory) Spec() Spec {
	return Spec{
		Name: "list_directory",
		Description: "List a directory's entries, sorted by name. Directories end with '/', symlinks are shown as 'name -> target'. " +
			".git is not listed; write-blocklisted directories are marked.",
		Parameters: mustSchema(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"Directory relative to the project root. Default \".\" (the root)."}` +
			`},"additionalProperties":false}`),
	}
}

func (t *listDirectory) Run(_ context.Context, raw json.RawMessage) (Result, error) {
	var a struct {
		Path string `json:"path"`
	}
	if r := decodeArgs("list_directory", raw, &a); r != nil {
		return *r, nil
	}
	p, fi, res, err := t.s.statForRead("list_directory", a.Path, "list")
	if res != nil {
		return *res, err
	}
	defer p.Close()
	if !fi.IsDir() {
		return errResult("%s is a file, not a directory; use read_file to read it", p.Asked), nil
	}
	d := p.dir // statForRead holds the directory itself open
	entries, err := readDirSorted(d)
	if err != nil {
		return fsResult("list "+p.Asked, err)
	}
	var b strings.Builder
	shown := 0
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		if shown == listCap {
			fmt.Fprintf(&b, "[... %d more entries not shown; list a subdirectory or use grep with a glob]\n", len(entries)-shown)
			break
		}
		shown++
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			target, err := readlinkAt(d, e.Name())
			if err != nil {
				target = "?"
			}
			fmt.Fprintf(&b, "%s -> %s\n", e.Name(), target)
		case e.IsDir():
			b.WriteString(e.Name() + "/")
			if _, blocked := Blocked(e.Name()); blocked {
				b.WriteString("  (write-blocklisted: not checkpointed, file tools do not write here)")
			}
			b.WriteByte('\n')
		default:
			b.WriteString(e.Name() + "\n")
		}
	}
	if shown == 0 {
		b.WriteString("(empty directory)\n")
	}
	return Result{Content: b.String(), Display: &Display{Kind: KindRead, Path: p.Rel, Title: "list " + p.Rel}}, nil
}

// statForRead resolves a path argument for reading ("" means the root),
// opens it (see Set.open) and describes it; a directory is opened itself
// (the target's dir, with no name). When it returns a non-nil
// Result (or error), the tool returns that: the path is refused, missing
// or unreadable; otherwise the caller closes the target.
func (s *Set) statForRead(tool, asked, verb string) (*target, fs.FileInfo, *Result, error) {
	if asked == "" {
		asked = "."
	}
	p, err := s.openForRead(asked)
	if err != nil {
		r, err := openFailed(p, err, verb, "%s does not exist")
		return nil, nil, &r, err
	}
	fi, err := p.lstat()
	if err != nil {
		p.Close()
		r := errResult("%s does not exist", p.Asked)
		if !errors.Is(err, fs.ErrNotExist) {
			r, err = fsResult(verb+" "+p.Asked, err)
			return nil, nil, &r, err
		}
		return nil, nil, &r, nil
	}
	if fi.IsDir() && p.name != "" {
		// A directory is held open itself, so that its entry being
		// swapped later changes nothing.
		d, err := p.openFile(unix.O_RDONLY | unix.O_DIRECTORY)
		if err != nil {
			p.Close()
			r := changedErr(p.Asked)
			if !errors.Is(err, unix.ELOOP) {
				r, err = fsResult(verb+" "+p.Asked, err)
				return nil, nil, &r, err
			}
			return nil, nil, &r, nil
		}
		p.dir.Close()
		p.dir, p.name = d, ""
	}
	s.afterResolve(tool, p.Rel)
	return p, fi, nil, nil
}

// readDirSorted reads every entry of an open directory, sorted by name.
func readDirSorted(d *os.File) ([]fs.DirEntry, error) {
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, nil
}
