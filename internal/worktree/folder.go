package worktree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// FolderError refuses a session in a folder outside git; nothing was
// created. Code is fault.FolderTooBroad, fault.DataDirInFolder or
// fault.SessionWorktree.
type FolderError struct {
	Code fault.Code
	Msg  string
	Err  error
}

func (e *FolderError) Error() string { return e.Msg }
func (e *FolderError) Unwrap() error { return e.Err }

// FaultCode is the refusal's code in the one table of failures.
func (e *FolderError) FaultCode() fault.Code { return e.Code }

// FolderLimits are a folder session's capture limits ([workspace]
// max_files and max_file_size).
type FolderLimits struct {
	MaxFiles    int   // more files to capture refuse the folder (0: no limit)
	MaxFileSize int64 // larger files are left out of every capture (0: no limit)
}

// folderGitDir is the private repository of folder in the data directory:
// <data-dir>/folders/<key>/git, the key a hash of the folder's path. Every
// session of the folder (in this data directory) shares it, as in-place
// sessions of a checkout share its repository.
func folderGitDir(dataDir, folder string) string {
	sum := sha256.Sum256([]byte(folder))
	return filepath.Join(dataDir, "folders", hex.EncodeToString(sum[:8]), "git")
}

// CheckFolder refuses a folder session where it would do harm: in the
// home directory or / unless asked for explicitly, with the data directory
// inside the folder, or in another session's worktree (owner names the
// session whose worktree a directory is, "" when none or unknown; nil
// knows none).
func CheckFolder(dataDir, folder string, explicit bool, owner func(dir string) string) error {
	home, _ := os.UserHomeDir()
	if !explicit {
		for _, broad := range []string{"/", home} {
			if broad != "" && fsutil.SameDir(folder, broad) {
				return &FolderError{Code: fault.FolderTooBroad, Msg: fmt.Sprintf("%s is not in a git repository and is as broad as your home directory or /: yolop does not keep file checkpoints of all of it unless you say so (--workspace in-place); start yolop in a project folder, or use --workspace none for a conversation without file checkpoints (nothing was created)", folder)}
			}
		}
	}
	d := fsutil.ResolveExisting(dataDir)
	if rel, err := filepath.Rel(fsutil.ResolveExisting(folder), d); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return &FolderError{Code: fault.DataDirInFolder, Msg: fmt.Sprintf("the data directory %s is inside %s, so the folder's checkpoints would be saved among the files they capture; pass a data directory outside it (--data-dir DIR or YOLOP_DATA_DIR; the default is ~/.local/share/yolop) and start again (nothing was created)", dataDir, folder)}
	}
	wts := fsutil.ResolveExisting(filepath.Join(dataDir, "worktrees"))
	if rel, err := filepath.Rel(wts, fsutil.ResolveExisting(folder)); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		what := "a session worktree"
		if id := ownerOf(owner, folder); id != "" {
			what = "the worktree of session " + id
		}
		return &FolderError{Code: fault.SessionWorktree, Msg: fmt.Sprintf("%s is inside %s (under %s) and is no git checkout any more: a session there would snapshot another session's files; continue that session (yolop --session ID) or start yolop in your own folder (nothing was created)", folder, what, wts)}
	}
	return nil
}

func ownerOf(owner func(string) string, dir string) string {
	if owner == nil {
		return ""
	}
	return owner(dir)
}

// PrepareFolder makes sure folder has its private repository in the data
// directory with a first commit (snapshot.ImportFolder), refusing a folder
// with more than maxFiles files to capture (0: no limit) and leaving out
// files over maxFileSize bytes (0: none); notice (nil: nobody) hears the
// progress when the capture takes over a second. It returns the
// repository's git dir.
func PrepareFolder(ctx context.Context, dataDir, folder string, maxFiles int, maxFileSize int64, notice func(string)) (string, error) {
	gitDir := folderGitDir(dataDir, folder)
	if err := os.MkdirAll(filepath.Dir(gitDir), 0o700); err != nil {
		return "", fmt.Errorf("create the folder's private repository: %w", err)
	}
	// One first capture at a time per folder: sessions starting together
	// wait for the one that writes it.
	lock, err := os.OpenFile(filepath.Dir(gitDir)+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", fmt.Errorf("lock the folder's private repository: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock the folder's private repository: %w", err)
	}
	start := time.Now()
	told := false
	var lastTold time.Time
	progress := func(done, total int) {
		if notice == nil || time.Since(start) < time.Second || time.Since(lastTold) < time.Second {
			return
		}
		lastTold, told = time.Now(), true
		if total == 0 {
			notice(fmt.Sprintf("first capture of %s: listing its files…", folder))
			return
		}
		notice(fmt.Sprintf("first capture of %s: %d of %d files…", folder, done, total))
	}
	res, err := snapshot.ImportFolder(ctx, snapshot.ImportOptions{GitDir: gitDir, Folder: folder, MaxFiles: maxFiles, MaxFileSize: maxFileSize, Progress: progress})
	var tm *snapshot.TooManyFilesError
	if errors.As(err, &tm) {
		return "", &FolderError{Code: fault.FolderTooBroad, Msg: fmt.Sprintf("%s is not in a git repository and holds more than %d files to capture ([workspace] max_files): list what to leave out in a %s file there (gitignore syntax), start yolop in a smaller folder, force it with --workspace in-place, or use --workspace none for no file checkpoints (nothing was created)", folder, tm.Max, snapshot.FolderIgnoreFile), Err: err}
	}
	if err != nil {
		return "", fmt.Errorf("first capture of %s: %w", folder, err)
	}
	if told || (!res.Existed && time.Since(start) >= time.Second) {
		if notice != nil {
			notice(fmt.Sprintf("first capture of %s: %d files (%s) in %.1f s", folder, res.Files, fsutil.SizeText(res.Bytes), time.Since(start).Seconds()))
		}
	}
	return gitDir, nil
}
