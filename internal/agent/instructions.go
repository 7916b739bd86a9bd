package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// InstructionsFile is the name of a project-instructions file.
const InstructionsFile = "AGENTS.md"

// Caps on what project instructions may add to every request.
const (
	MaxInstructionFile  = 32 << 10 // bytes read from one file
	MaxInstructionTotal = 64 << 10 // bytes from all files together
)

// Instruction is one instructions file that was read.
type Instruction struct {
	Path      string // absolute path
	Rel       string // as shown to the user: relative to the worktree top, or the user-level path
	Size      int64  // the file's size
	Used      int    // bytes that entered the system prompt
	Truncated bool
	Content   string
}

// Instructions are the project instructions in force for one turn.
type Instructions struct {
	Files []Instruction
	// Skipped says which files were found but left out, and why.
	Skipped []string
}

// LoadInstructions reads the user-level file, then AGENTS.md of every
// directory from top down to dir (a nested file adds to its parent's). It
// reads the files as they are now: after a rewind, the restored ones. A
// file that is not valid UTF-8 text, is not a regular file, or is a
// symlink that leaves top is skipped with a reason; what exceeds the caps
// is cut and marked.
func LoadInstructions(top, dir, user string) Instructions {
	var in Instructions
	total := 0
	add := func(path, rel string, confine bool) {
		if total >= MaxInstructionTotal {
			in.Skipped = append(in.Skipped, rel+": the instructions already reach their size cap")
			return
		}
		f, why := readInstruction(path, top, confine)
		if why != "" {
			if why != "missing" {
				in.Skipped = append(in.Skipped, rel+": "+why)
			}
			return
		}
		f.Rel = rel
		if room := MaxInstructionTotal - total; len(f.Content) > room {
			f.Content = cutUTF8(f.Content, room)
			f.Truncated = true
		}
		f.Used = len(f.Content)
		total += f.Used
		in.Files = append(in.Files, f)
	}
	if user != "" {
		add(user, user, false)
	}
	if top == "" {
		return in
	}
	rel, err := filepath.Rel(top, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = "."
	}
	cur := top
	parts := []string{}
	if rel != "." {
		parts = strings.Split(rel, string(filepath.Separator))
	}
	for i := 0; ; i++ {
		shown := filepath.ToSlash(filepath.Join(append(append([]string{}, parts[:i]...), InstructionsFile)...))
		add(filepath.Join(cur, InstructionsFile), shown, true)
		if i == len(parts) {
			break
		}
		cur = filepath.Join(cur, parts[i])
	}
	return in
}

// readInstruction reads one file; why is "missing" when there is none.
func readInstruction(path, top string, confine bool) (Instruction, string) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Instruction{}, "missing"
	}
	if err != nil {
		return Instruction{}, err.Error()
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return Instruction{}, "a symlink that leads nowhere"
		}
		if confine {
			realTop, err := filepath.EvalSymlinks(top)
			if err != nil {
				return Instruction{}, err.Error()
			}
			if r, err := filepath.Rel(realTop, target); err != nil || r == ".." || strings.HasPrefix(r, "../") {
				return Instruction{}, "a symlink that leaves the repository"
			}
		}
		if st, err = os.Stat(target); err != nil {
			return Instruction{}, err.Error()
		}
		path = target
	}
	if !st.Mode().IsRegular() {
		return Instruction{}, "not a regular file"
	}
	f, err := os.Open(path)
	if err != nil {
		return Instruction{}, err.Error()
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxInstructionFile+1))
	if err != nil {
		return Instruction{}, err.Error()
	}
	out := Instruction{Path: path, Size: st.Size()}
	if len(b) > MaxInstructionFile {
		b = b[:MaxInstructionFile]
		out.Truncated = true
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return Instruction{}, "binary, not text"
	}
	text := string(b)
	if out.Truncated {
		text = cutUTF8(text, len(text))
	}
	if !utf8.ValidString(text) {
		return Instruction{}, "not valid UTF-8 text"
	}
	out.Content = text
	return out, ""
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		n = len(s)
	}
	for n > 0 && !utf8.ValidString(s[:n]) {
		n--
	}
	return s[:n]
}

// Prompt renders the instructions for the system prompt.
func (in Instructions) Prompt() string {
	if len(in.Files) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("# Project instructions\n\nThe user and the project ask you to follow these instructions (later, more specific files add to earlier ones):\n")
	for _, f := range in.Files {
		fmt.Fprintf(&b, "\n## %s\n\n%s", f.Rel, strings.TrimRight(f.Content, "\n"))
		if f.Truncated {
			b.WriteString("\n\n[cut here: the file is larger than the instructions' size cap]")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Report describes what was loaded, for /context.
func (in Instructions) Report() string {
	var b strings.Builder
	if len(in.Files) == 0 {
		b.WriteString("Project instructions: none (AGENTS.md files from the repository top down to the working directory, and the user-level file, are read before every turn)\n")
	} else {
		b.WriteString("Project instructions, read before every turn:\n")
		// Two columns, aligned: the paths left, the sizes right.
		nameW, sizeW := 0, 0
		for _, f := range in.Files {
			nameW = max(nameW, utf8.RuneCountInString(f.Rel))
			sizeW = max(sizeW, len(strconv.FormatInt(f.Size, 10)))
		}
		for _, f := range in.Files {
			note := ""
			if f.Truncated {
				note = fmt.Sprintf(" (cut to %d bytes by the size cap)", f.Used)
			}
			pad := strings.Repeat(" ", nameW-utf8.RuneCountInString(f.Rel))
			fmt.Fprintf(&b, "  %s%s  %*d bytes%s\n", f.Rel, pad, sizeW, f.Size, note)
		}
	}
	for _, s := range in.Skipped {
		fmt.Fprintf(&b, "  skipped %s\n", s)
	}
	return b.String()
}
