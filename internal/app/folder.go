package app

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

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// Codes of the refusals of a session in a folder outside git.
const (
	CodeFolderTooBroad  = string(fault.FolderTooBroad)
	CodeDataDirInFolder = string(fault.DataDirInFolder)
	// CodeSessionWorktree refuses a new session inside another session's
	// worktree (a git checkout, or a folder once its .git is gone).
	CodeSessionWorktree = string(fault.SessionWorktree)
)

// Defaults of [workspace] max_files and max_file_size.
const (
	DefaultMaxFiles    = 200_000
	DefaultMaxFileSize = 50 << 20
)

// folderLimits are a folder session's capture limits from the settings.
type folderLimits struct {
	maxFiles    int
	maxFileSize int64
}

func loadFolderLimits() (folderLimits, error) {
	l := folderLimits{maxFiles: DefaultMaxFiles, maxFileSize: DefaultMaxFileSize}
	path := provider.DefaultSettingsPath(os.Getenv)
	st, err := provider.LoadSettings(path)
	if err != nil {
		return l, err
	}
	if v := st.Workspace.MaxFiles; v != nil {
		if *v < 1 {
			return l, fmt.Errorf("settings %s: [workspace] max_files = %d: want 1 or more", path, *v)
		}
		l.maxFiles = *v
	}
	if v := st.Workspace.MaxFileSize; v != nil {
		l.maxFileSize = int64(*v) // 0: no limit
	}
	return l, nil
}

// folderGitDir is the private repository of folder in the data directory:
// <data-dir>/folders/<key>/git, the key a hash of the folder's path. Every
// session of the folder (in this data directory) shares it, as in-place
// sessions of a checkout share its repository.
func folderGitDir(dataDir, folder string) string {
	sum := sha256.Sum256([]byte(folder))
	return filepath.Join(dataDir, "folders", hex.EncodeToString(sum[:8]), "git")
}

// checkFolder refuses a folder session where it would do harm: in the home
// directory or / unless asked for explicitly, with the data directory
// inside the folder, or in another session's worktree.
func checkFolder(dataDir, folder string, explicit bool) error {
	home, _ := os.UserHomeDir()
	if !explicit {
		for _, broad := range []string{"/", home} {
			if broad != "" && sameDir(folder, broad) {
				return &checkpoint.Error{Code: CodeFolderTooBroad, Msg: fmt.Sprintf("%s is not in a git repository and is as broad as your home directory or /: yolop does not keep file checkpoints of all of it unless you say so (--workspace in-place); start yolop in a project folder, or use --workspace none for a conversation without file checkpoints (nothing was created)", folder)}
			}
		}
	}
	d := resolveExisting(dataDir)
	if rel, err := filepath.Rel(resolveExisting(folder), d); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return &checkpoint.Error{Code: CodeDataDirInFolder, Msg: fmt.Sprintf("the data directory %s is inside %s, so the folder's checkpoints would be saved among the files they capture; pass a data directory outside it (--data-dir DIR or YOLOP_DATA_DIR; the default is ~/.local/share/yolop) and start again (nothing was created)", dataDir, folder), Err: ErrDataDirInRepo}
	}
	wts := resolveExisting(filepath.Join(dataDir, "worktrees"))
	if rel, err := filepath.Rel(wts, resolveExisting(folder)); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		owner := catalog.SessionOfWorktree(dataDir, folder)
		what := "a session worktree"
		if owner != "" {
			what = "the worktree of session " + owner
		}
		return &checkpoint.Error{Code: CodeSessionWorktree, Msg: fmt.Sprintf("%s is inside %s (under %s) and is no git checkout any more: a session there would snapshot another session's files; continue that session (yolop --session ID) or start yolop in your own folder (nothing was created)", folder, what, wts)}
	}
	return nil
}

// prepareFolder makes sure folder has its private repository with a first
// commit (snapshot.ImportFolder), telling progress through notice when the
// capture takes over a second. It returns the repository's git dir.
func prepareFolder(ctx context.Context, dataDir, folder string, explicit bool, notice func(string)) (string, error) {
	lim, err := loadFolderLimits()
	if err != nil {
		return "", err
	}
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
	maxFiles := lim.maxFiles
	if explicit {
		maxFiles = 0
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
	res, err := snapshot.ImportFolder(ctx, snapshot.ImportOptions{GitDir: gitDir, Folder: folder, MaxFiles: maxFiles, MaxFileSize: lim.maxFileSize, Progress: progress})
	var tm *snapshot.TooManyFilesError
	if errors.As(err, &tm) {
		return "", &checkpoint.Error{Code: CodeFolderTooBroad, Msg: fmt.Sprintf("%s is not in a git repository and holds more than %d files to capture ([workspace] max_files): list what to leave out in a %s file there (gitignore syntax), start yolop in a smaller folder, force it with --workspace in-place, or use --workspace none for no file checkpoints (nothing was created)", folder, tm.Max, snapshot.FolderIgnoreFile), Err: err}
	}
	if err != nil {
		return "", fmt.Errorf("first capture of %s: %w", folder, err)
	}
	if told || (!res.Existed && time.Since(start) >= time.Second) {
		if notice != nil {
			notice(fmt.Sprintf("first capture of %s: %d files (%s) in %.1f s", folder, res.Files, sizeText(res.Bytes), time.Since(start).Seconds()))
		}
	}
	return gitDir, nil
}

// noticeFunc turns a turn's update callback into a notice sink (nil for a
// caller that takes no updates).
func noticeFunc(onUpdate func(agent.Update)) func(string) {
	if onUpdate == nil {
		return nil
	}
	return func(s string) { onUpdate(agent.Update{Kind: agent.UpdateNotice, Text: s}) }
}
