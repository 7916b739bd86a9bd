package app

import (
	"errors"
	"fmt"
	"os"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/worktree"
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

// folderRefusal gives a folder's refusal the type hosts show as a
// refusal (ACP: "Refused (code): …"), with its code.
func folderRefusal(err error) error {
	var fe *worktree.FolderError
	if errors.As(err, &fe) {
		return &checkpoint.Error{Code: string(fe.Code), Msg: fe.Msg, Err: fe.Err}
	}
	return err
}
