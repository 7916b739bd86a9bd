package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/yolop-dev/yolop/internal/failpoint"
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/git"
)

// A folder outside git gets a private repository of its own (Options.Folder):
// its git directory lives in the data directory, the folder is its work
// tree, and nothing is written into the folder. FolderBranch is the branch
// of that repository whose one commit holds the folder's first capture.
const FolderBranch = "refs/heads/folder"

// FolderIgnoreFile is the file of ignore rules (gitignore syntax, relative
// to the folder) that a folder's captures honour besides .gitignore.
const FolderIgnoreFile = ".yolopignore"

// folderAttributes is the folder repository's info/attributes: the
// highest-precedence attributes file, so no .gitattributes the agent writes
// in the folder can make yolop's git convert content or run a filter,
// textconv or merge driver (`!attr` puts the attribute back to unspecified).
const folderAttributes = "* -text -eol -filter -ident -working-tree-encoding !diff !merge\n"

// ErrTooManyFiles is wrapped by the *TooManyFilesError of ImportFolder.
var ErrTooManyFiles = fault.Plain("snapshot: folder holds too many files")

// TooManyFilesError refuses the first capture of a folder holding more
// files than ImportOptions.MaxFiles.
type TooManyFilesError struct {
	Folder string
	Max    int
}

func (e *TooManyFilesError) Error() string {
	return fmt.Sprintf("%s holds more than %d files that would be captured", e.Folder, e.Max)
}

func (e *TooManyFilesError) Unwrap() error { return ErrTooManyFiles }

// ImportOptions configure ImportFolder.
type ImportOptions struct {
	GitDir string // the folder repository's git directory (created when missing)
	Folder string // the folder, absolute
	// MaxFiles refuses a folder with more files to capture (0 = no limit).
	MaxFiles int
	// MaxFileSize leaves out files larger than this many bytes (0 = none).
	MaxFileSize int64
	// Progress, when set, is called now and then with the files written
	// so far and the number to write (0 while still counting).
	Progress func(done, total int)
}

// ImportResult is what a folder's first capture wrote.
type ImportResult struct {
	Files   int      // files and symlinks in the commit
	Bytes   int64    // their size
	LeftOut []string // files larger than MaxFileSize, sorted
	Existed bool     // the repository had its commit already: nothing was done
}

// InitFolder creates the folder repository's git directory when missing and
// (re)writes the files yolop keeps there: its attributes, its excludes (the
// write blocklist, restore temporaries and the folder's .yolopignore) and a
// config with nothing that runs.
func InitFolder(ctx context.Context, gitDir, folder string) error {
	if _, err := os.Stat(filepath.Join(gitDir, "HEAD")); err != nil {
		if err := os.MkdirAll(filepath.Dir(gitDir), 0o700); err != nil {
			return err
		}
		// No template: no sample hooks, no description, nothing that runs.
		if _, err := git.New(filepath.Dir(gitDir)).Run(ctx, "init", "--bare", "--quiet", "--template=", "--initial-branch=folder", "--object-format=sha1", gitDir); err != nil {
			return fmt.Errorf("create the folder's private repository: %w", err)
		}
	}
	if err := os.Chmod(gitDir, 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(gitDir, "info"), 0o700); err != nil {
		return err
	}
	cfg := "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tlogallrefupdates = false\n\tfilemode = true\n\tsymlinks = true\n\tignorecase = false\n\tautocrlf = false\n[gc]\n\tauto = 0\n"
	files := map[string]string{
		"config":          cfg,
		"info/attributes": folderAttributes,
		"info/exclude":    folderExcludes(folder),
	}
	for name, content := range files {
		if err := writeIfChanged(filepath.Join(gitDir, name), []byte(content)); err != nil {
			return err
		}
	}
	return nil
}

// folderExcludes is the folder repository's info/exclude: the folder's
// .yolopignore (rules relative to the folder, as git reads info/exclude),
// then the write blocklist and restore temporaries.
func folderExcludes(folder string) string {
	var b strings.Builder
	b.WriteString(folderIgnoreText(folder))
	b.WriteString("# yolop: write blocklist and restore temporaries, never captured\n")
	for _, n := range Blocklist {
		b.WriteString(n + "\n")
	}
	b.WriteString(tmpPrefix + "*\n")
	return b.String()
}

// folderIgnoreText is the folder's .yolopignore as lines of an exclude
// file ("" when there is none).
func folderIgnoreText(folder string) string {
	s := readIgnoreFile(filepath.Join(folder, FolderIgnoreFile))
	if s == "" {
		return ""
	}
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return "# " + FolderIgnoreFile + "\n" + s
}

// readIgnoreFile reads a regular file of ignore rules, not following a
// symlink ("" when there is none or it is unreadable or over 1 MiB).
func readIgnoreFile(path string) string {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() > 1<<20 {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

// FolderRunner is a git runner pinned to the folder repository: its git dir,
// the folder as work tree, and an index file that does not exist unless
// index is set.
func FolderRunner(gitDir, folder, index string) *git.Runner {
	return git.Dirs{GitDir: gitDir, CommonDir: gitDir, WorkTree: folder}.Runner().With("GIT_INDEX_FILE=" + index)
}

// ImportFolder makes the folder repository's first commit: every file of the
// folder a capture would take (not ignored by .gitignore, .yolopignore or
// the blocklist, not in a nested repository, not larger than MaxFileSize),
// written with its trees and the commit into one pack (packWriter: what
// `git fast-import` would write, without its per-object cost and without
// a loose object per file, as `git add` would make), and the repository's
// index describing it with the stat data of the files as read, so the session's first capture (seeded from
// that index) hashes only what changed since. It does nothing when the
// repository has its commit already.
func ImportFolder(ctx context.Context, o ImportOptions) (ImportResult, error) {
	if err := InitFolder(ctx, o.GitDir, o.Folder); err != nil {
		return ImportResult{}, err
	}
	r := FolderRunner(o.GitDir, o.Folder, filepath.Join(o.GitDir, "index"))
	if _, err := r.Run(ctx, "rev-parse", "--verify", "--quiet", FolderBranch+"^{commit}"); err == nil {
		return ImportResult{Existed: true}, nil
	}
	paths, err := listFolder(ctx, o)
	if err != nil {
		return ImportResult{}, err
	}
	if o.Progress != nil {
		o.Progress(0, len(paths))
	}
	return importPaths(ctx, o, r, paths)
}

// listFolder lists the files a capture of the folder takes, as git sees
// them: untracked and not ignored, against an index that does not exist.
func listFolder(ctx context.Context, o ImportOptions) ([]string, error) {
	r := FolderRunner(o.GitDir, o.Folder, filepath.Join(o.GitDir, "no-index"))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	args := []string{"-c", "core.quotePath=false", "ls-files", "-z", "--others", "--exclude-standard"}
	cmd, stderr := r.Command(ctx, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, r.WrapError(args, err, stderr)
	}
	var paths []string
	nested := nestedDirs{root: o.Folder, known: map[string]bool{}}
	br := bufio.NewReaderSize(out, 1<<16)
	tooMany := false
	for {
		p, err := br.ReadString(0)
		if err != nil {
			break
		}
		p = strings.TrimSuffix(p, "\x00")
		if p == "" || strings.HasSuffix(p, "/") || excludedPath(p) || nested.under(p) {
			continue // a nested repository, or the blocklist
		}
		paths = append(paths, p)
		if o.MaxFiles > 0 && len(paths) > o.MaxFiles {
			tooMany = true
			cancel()
			break
		}
		if o.Progress != nil && len(paths)%10000 == 0 {
			o.Progress(0, 0)
		}
	}
	_, _ = io.Copy(io.Discard, br)
	werr := cmd.Wait()
	if tooMany {
		return nil, &TooManyFilesError{Folder: o.Folder, Max: o.MaxFiles}
	}
	if werr != nil {
		return nil, r.WrapError(args, werr, stderr)
	}
	sort.Strings(paths)
	return paths, nil
}

// nestedDirs tells whether a path lies in a directory holding a .git entry
// (a nested repository, as the capture's walk sees one, even where git
// would not recognize it), caching each directory's answer.
type nestedDirs struct {
	root  string
	known map[string]bool
}

func (n nestedDirs) under(p string) bool {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		v, ok := n.known[d]
		if !ok {
			_, err := os.Lstat(filepath.Join(n.root, filepath.FromSlash(d), ".git"))
			v = err == nil
			n.known[d] = v
		}
		if v {
			return true
		}
	}
	return false
}

// indexEntryOut is one entry of the index ImportFolder writes.
type indexEntryOut struct {
	path string
	st   *syscall.Stat_t
	mode uint32
	oid  [sha1.Size]byte
}

func importPaths(ctx context.Context, o ImportOptions, r *git.Runner, paths []string) (ImportResult, error) {
	var res ImportResult
	pw, err := newPackWriter(filepath.Join(o.GitDir, "objects"))
	if err != nil {
		return res, fmt.Errorf("write the folder's objects: %w", err)
	}
	entries := make([]indexEntryOut, 0, len(paths))
	last := time.Now()
	for i, p := range paths {
		if ctx.Err() != nil {
			return ImportResult{}, pw.abort(ctx.Err())
		}
		if i == len(paths)/2 {
			failpoint.Pause("folder.import_half", fmt.Sprintf("%d of %d", i, len(paths)))
		}
		ent, size, skip, err := importOne(pw, o, p)
		if err != nil {
			return ImportResult{}, pw.abort(err)
		}
		switch skip {
		case skipLarge:
			res.LeftOut = append(res.LeftOut, p)
			continue
		case skipOther:
			continue
		}
		res.Files++
		res.Bytes += size
		entries = append(entries, ent)
		if o.Progress != nil && time.Since(last) > 250*time.Millisecond {
			last = time.Now()
			o.Progress(i+1, len(paths))
		}
	}
	// The trees and the commit go into the same pack: no loose object.
	tree, err := pw.writeTrees(entries)
	if err != nil {
		return ImportResult{}, pw.abort(err)
	}
	now := time.Now().Unix()
	commit, err := pw.addBytes(packCommit, fmt.Appendf(nil, "tree %s\nauthor yolop <yolop@localhost> %d +0000\ncommitter yolop <yolop@localhost> %d +0000\n\nyolop: first capture of the folder\n", hex.EncodeToString(tree[:]), now, now))
	if err != nil {
		return ImportResult{}, pw.abort(err)
	}
	if err := pw.finish(); err != nil {
		return ImportResult{}, fmt.Errorf("write the folder's objects: %w", err)
	}
	if err := writeIndex(filepath.Join(o.GitDir, "index"), entries); err != nil {
		return ImportResult{}, fmt.Errorf("write the folder repository's index: %w", err)
	}
	if _, err := r.Run(ctx, "-c", "core.fsync=reference", "update-ref", FolderBranch, hex.EncodeToString(commit[:])); err != nil {
		return ImportResult{}, fmt.Errorf("write the folder's first commit: %w", err)
	}
	if o.Progress != nil {
		o.Progress(len(paths), len(paths))
	}
	return res, nil
}

type skipKind int

const (
	skipNone skipKind = iota
	skipLarge
	skipOther // gone, a directory, a socket, a fifo
)

// importOne writes path's blob into the pack and returns its index entry,
// with the stat data of the file as it was read.
func importOne(pw *packWriter, o ImportOptions, p string) (indexEntryOut, int64, skipKind, error) {
	full := filepath.Join(o.Folder, filepath.FromSlash(p))
	var content io.Reader
	var f *os.File
	fi, err := os.Lstat(full)
	if err != nil {
		return indexEntryOut{}, 0, skipOther, nil
	}
	mode := uint32(0o100644)
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(full)
		if err != nil {
			return indexEntryOut{}, 0, skipOther, nil
		}
		mode = 0o120000
		content = strings.NewReader(target)
		fi, err = os.Lstat(full)
		if err != nil || int(fi.Size()) != len(target) {
			return indexEntryOut{}, 0, skipOther, nil
		}
	case fi.Mode().IsRegular():
		if o.MaxFileSize > 0 && fi.Size() > o.MaxFileSize {
			return indexEntryOut{}, 0, skipLarge, nil
		}
		f, err = os.OpenFile(full, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return indexEntryOut{}, 0, skipNone, &CaptureError{Reason: "a file cannot be read: " + p, Err: fmt.Errorf("%w: %v", ErrUnreadable, err)}
		}
		defer f.Close()
		if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
			return indexEntryOut{}, 0, skipOther, nil
		}
		if o.MaxFileSize > 0 && fi.Size() > o.MaxFileSize {
			return indexEntryOut{}, 0, skipLarge, nil
		}
		if fi.Mode().Perm()&0o100 != 0 {
			mode = 0o100755
		}
		content = f
	default:
		return indexEntryOut{}, 0, skipOther, nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return indexEntryOut{}, 0, skipOther, nil
	}
	size := fi.Size()
	oid, err := pw.addBlob(content, size)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		// The file shrank while it was read: left to the session's
		// first capture, which hashes what is there then.
		return indexEntryOut{}, 0, skipOther, nil
	}
	if err != nil {
		return indexEntryOut{}, 0, skipNone, &CaptureError{Reason: "a file cannot be read or its object written: " + p, Err: fmt.Errorf("%w: %v", ErrUnreadable, err)}
	}
	return indexEntryOut{path: p, st: st, mode: mode, oid: oid}, size, skipNone, nil
}

// writeIndex writes a version 2 index of entries (sorted by path) with
// their stat data, atomically.
func writeIndex(path string, entries []indexEntryOut) error {
	var b bytes.Buffer
	b.WriteString("DIRC")
	_ = binary.Write(&b, binary.BigEndian, uint32(2))
	_ = binary.Write(&b, binary.BigEndian, uint32(len(entries)))
	for _, e := range entries {
		st := e.st
		start := b.Len()
		ctime, mtime := statTimes(st)
		for _, v := range []uint32{
			uint32(ctime.Unix()), uint32(ctime.Nanosecond()),
			uint32(mtime.Unix()), uint32(mtime.Nanosecond()),
			uint32(st.Dev), uint32(st.Ino), e.mode, st.Uid, st.Gid, uint32(st.Size),
		} {
			_ = binary.Write(&b, binary.BigEndian, v)
		}
		b.Write(e.oid[:])
		n := len(e.path)
		if n > 0xfff {
			n = 0xfff
		}
		_ = binary.Write(&b, binary.BigEndian, uint16(n))
		b.WriteString(e.path)
		// NUL-padded to a multiple of 8, at least one NUL.
		pad := 8 - (b.Len()-start)%8
		b.Write(make([]byte, pad))
	}
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return fsutil.WriteFileAtomic(path, b.Bytes(), 0o600)
}
