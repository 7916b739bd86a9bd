package gitstate

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/session"
)

// File is the journal of the records in the session directory.
const File = "git-state.jsonl"

// Record is one line of File: a turn's.
type Record struct {
	Turn    string   `json:"turn"`
	Head    string   `json:"head,omitempty"`    // the commit HEAD was at when the turn started
	Changed []string `json:"changed,omitempty"` // git files the turn changed
}

// State is what yolop compares: HEAD's commit and a hash of every file of
// the git dirs that decides what git runs or where refs point.
type State struct {
	head  string
	files map[string]string // display path (".git/hooks/pre-commit") → sha256
}

// Read reads the git state of the checkout top whose common git dir is
// common, without running git.
func Read(top, common string) State {
	st := State{files: map[string]string{}}
	gitDir := filepath.Join(top, ".git")
	if b, err := os.ReadFile(gitDir); err == nil {
		// A linked worktree: .git is a file naming its own git dir.
		if d, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: "); ok {
			if !filepath.IsAbs(d) {
				d = filepath.Join(top, d)
			}
			gitDir = d
		}
	}
	add := func(base, rel, shown string) {
		p := filepath.Join(base, rel)
		filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			r, _ := filepath.Rel(base, path)
			if strings.HasPrefix(filepath.ToSlash(r), "refs/yolop/") || r == filepath.Join("refs", "yolop") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() || !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			sum := sha256.Sum256(b)
			st.files[shown+filepath.ToSlash(r)] = hex.EncodeToString(sum[:8])
			return nil
		})
	}
	shown := func(dir string) string {
		if r, err := filepath.Rel(top, dir); err == nil && !strings.HasPrefix(r, "..") {
			return filepath.ToSlash(r) + "/"
		}
		return dir + "/"
	}
	for _, rel := range []string{"HEAD", "config.worktree"} {
		add(gitDir, rel, shown(gitDir))
	}
	for _, rel := range []string{"config", "hooks", "info", "refs", "packed-refs"} {
		add(common, rel, shown(common))
	}
	st.head = headCommit(gitDir, common)
	return st
}

// headCommit resolves HEAD to a commit by reading the ref files ("" when
// it cannot be read, or HEAD is unborn).
func headCommit(gitDir, common string) string {
	b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	h := strings.TrimSpace(string(b))
	ref, ok := strings.CutPrefix(h, "ref: ")
	if !ok {
		return h
	}
	for _, dir := range []string{gitDir, common} {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(ref))); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	f, err := os.Open(filepath.Join(common, "packed-refs"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if oid, name, ok := strings.Cut(sc.Text(), " "); ok && name == ref {
			return oid
		}
	}
	return ""
}

// Head is the commit HEAD was at ("" when it could not be read, or HEAD
// is unborn).
func (a State) Head() string { return a.head }

// ChangedSince lists the git files that differ between two states.
func (a State) ChangedSince(b State) []string {
	var out []string
	for p, h := range a.files {
		if b.files[p] != h {
			out = append(out, p)
		}
	}
	for p := range b.files {
		if _, ok := a.files[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// ChangeNote says what a turn changed in the checkout's git files.
func ChangeNote(turn string, changed []string) string {
	list := changed
	if len(list) > 5 {
		list = append(slices.Clone(list[:5]), fmt.Sprintf("and %d more", len(changed)-5))
	}
	return fmt.Sprintf("git's own files changed while %s ran: %s; a rewind does not undo them (inspect them with git, e.g. `git config --list --show-origin`, `ls .git/hooks`)", turn, strings.Join(list, ", "))
}

// Append appends a turn's record to the journal of the session directory
// dir.
func Append(dir string, rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, File), os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readRecords reads the records of the session directory dir (a line
// that does not parse is skipped: it is rewritten by nothing and only
// informs previews).
func readRecords(dir string) []Record {
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		return nil
	}
	var out []Record
	for _, line := range bytes.Split(b, []byte("\n")) {
		var r Record
		if len(line) > 0 && json.Unmarshal(line, &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// PreviewWarnings are what a preview in place says about git's own state,
// for the session directory dir and its checkout top (common: its common
// git dir): the git files the undone agent turns changed (never undone),
// and that HEAD moved since the target, so the restored files differ from
// the current HEAD as ordinary changes.
func PreviewWarnings(dir, top, common string) func(target string, undone []string) []checkpoint.Warning {
	return func(target string, undone []string) []checkpoint.Warning {
		recs := readRecords(dir)
		var out []checkpoint.Warning
		in := map[string]bool{}
		for _, id := range undone {
			in[id] = true
		}
		for _, r := range recs {
			if in[r.Turn] && len(r.Changed) > 0 {
				out = append(out, checkpoint.Warning{Kind: "git_changed", Turn: r.Turn, Message: ChangeNote(r.Turn, r.Changed)})
			}
		}
		now := Read(top, common).head
		for _, r := range recs {
			if r.Turn == target && r.Head != "" && now != "" && r.Head != now {
				out = append(out, checkpoint.Warning{Kind: "head_moved", Turn: target,
					Message: fmt.Sprintf("HEAD moved since %s (from %s to %s): the restored files are what they were then, so they show as changes against the current HEAD; your commits are untouched", target, git.ShortOID(r.Head), git.ShortOID(now))})
			}
		}
		return out
	}
}

// Checkout is the checkout of a session in place, whose git state its
// previews and turns look at.
type Checkout struct{ dir, top, common string }

// For returns the Checkout of the session whose directory is dir and
// workspace ws: nil unless it works in place in a git checkout (a folder
// outside git has no git state of its own to watch).
func For(dir string, ws session.Workspace) *Checkout {
	if ws.Kind != session.KindInPlace || ws.Folder {
		return nil
	}
	return &Checkout{dir: dir, top: ws.RepoRoot, common: ws.CommonDir}
}

// PreviewWarnings is the package's PreviewWarnings for c (nil for a nil
// Checkout).
func (c *Checkout) PreviewWarnings() func(target string, undone []string) []checkpoint.Warning {
	if c == nil {
		return nil
	}
	return PreviewWarnings(c.dir, c.top, c.common)
}

// Begin is the package's Begin for c (nil for a nil Checkout, whose End
// records nothing).
func (c *Checkout) Begin() *Turn {
	if c == nil {
		return nil
	}
	return Begin(c.dir, c.top, c.common)
}

// Turn is git's own state of a checkout read before a turn in place, to be
// compared with its state after the turn (End).
type Turn struct {
	dir, top, common string
	before           State
}

// Begin reads git's state of the checkout top (whose common git dir is
// common) before a turn of the session whose directory is dir.
func Begin(dir, top, common string) *Turn {
	return &Turn{dir: dir, top: top, common: common, before: Read(top, common)}
}

// End records in File what turn id changed in the checkout's git files,
// and returns what the user must be told: the files it changed, and a
// record that could not be written ("" when nothing). A nil Turn (no
// checkout in place) or an empty id (no turn ran) records nothing.
func (t *Turn) End(id string) string {
	if t == nil || id == "" {
		return ""
	}
	rec := Record{Turn: id, Head: t.before.Head(), Changed: Read(t.top, t.common).ChangedSince(t.before)}
	var note string
	if len(rec.Changed) > 0 {
		note = ChangeNote(id, rec.Changed)
	}
	if err := Append(t.dir, rec); err != nil {
		note = strings.TrimPrefix(note+"; ", "; ") + "could not record git's state for this turn (" + err.Error() + "): previews will not say whether HEAD moved since it"
	}
	return note
}
