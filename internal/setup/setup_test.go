package setup

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/git/gittest"
)

func TestMain(m *testing.M) { os.Exit(gittest.MainWithHome(m)) }

// TestRun: a setup that succeeds and one that fails are both recorded,
// shown as a command's live updates and told to the model; only the
// failure warns the user. A session with a record does not start again.
func TestRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		command, exit, notice, warning string
	}{
		{"echo ready > made.txt", `"exit_code":0`, "setup", ""},
		{"echo broken; exit 3", `"exit_code":3`, "setup_failed", "the worktree's setup command `echo broken; exit 3` failed"},
	} {
		dir, wt := t.TempDir(), t.TempDir()
		if Started(dir) {
			t.Fatal("started before it ran")
		}
		var notes []agent.NoticeData
		var updates []string
		s := Session{Dir: dir, Worktree: wt, Tasks: tools.NewTasks(t.TempDir()), Note: func(n agent.NoticeData) error {
			notes = append(notes, n)
			return nil
		}}
		warning, err := Run(context.Background(), s, c.command, func(u agent.Update) {
			if u.Kind == agent.UpdateSetup && u.Tool != nil && u.Text == "" {
				updates = append(updates, u.Tool.Status)
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", c.command, err)
		}
		if !strings.HasPrefix(warning, c.warning) || (c.warning == "") != (warning == "") {
			t.Errorf("%s: warning %q", c.command, warning)
		}
		if len(notes) != 1 || notes[0].Kind != c.notice {
			t.Errorf("%s: notices %+v", c.command, notes)
		}
		if len(updates) != 2 || updates[0] != "in_progress" || updates[1] == "in_progress" {
			t.Errorf("%s: updates %q", c.command, updates)
		}
		b, err := os.ReadFile(filepath.Join(dir, File))
		if err != nil || !strings.Contains(string(b), c.exit) || !strings.Contains(string(b), `"ended"`) || !json.Valid(b) {
			t.Errorf("%s: record %s %v", c.command, b, err)
		}
		if !Started(dir) {
			t.Errorf("%s: not started after it ran", c.command)
		}
	}
}
