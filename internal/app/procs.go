package app

import (
	"fmt"
	"os"
	"strings"

	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// reapSurvivors ends every process an earlier yolop process of this session
// left running (its process helper was killed with it, so nothing else
// will). It runs first when a session is opened, with the session lock
// held: the earlier owner is gone, and no tool of this process runs yet.
// It returns the note for the user and the processes it could not end,
// which stay active writers (a restore is refused) until they are gone.
func reapSurvivors(sess *session.Session) ([]string, []spawn.Record, error) {
	res, err := spawn.Reap(sess.Path(spawn.LedgerFile), sess.ID)
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	if len(res.Ended) > 0 {
		notes = append(notes, fmt.Sprintf("Ended %d process(es) that an earlier yolop process of this session left running, so they cannot write the workspace any more: %s.",
			len(res.Ended), describeProcs(res.Ended)))
	}
	if len(res.Left) > 0 {
		notes = append(notes, fmt.Sprintf("Could not end %d process(es) left running by an earlier yolop process of this session: %s. Restores are refused until they are gone; end them (kill -9 PID) or with /tasks stop p<PID>.",
			len(res.Left), describeProcs(res.Left)))
	}
	return notes, res.Left, nil
}

func describeProcs(rs []spawn.Record) string {
	var parts []string
	for i, r := range rs {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(rs)-5))
			break
		}
		c := r.Command
		if len(c) > 60 {
			c = c[:57] + "..."
		}
		if c == "" {
			parts = append(parts, fmt.Sprintf("pid %d", r.PID))
		} else {
			parts = append(parts, fmt.Sprintf("pid %d (%s)", r.PID, c))
		}
	}
	return strings.Join(parts, ", ")
}

// toolSettings reads the [tools] section of the settings file (the same
// file the provider configuration came from).
func toolSettings() (provider.Settings, error) {
	return provider.LoadSettings(provider.DefaultSettingsPath(os.Getenv))
}

// newTasks makes the session's command registry: every command carries the
// session marker and is recorded in the session's process ledger.
func newTasks(sess *session.Session, spill string, st provider.Settings) *tools.Tasks {
	return tools.NewSessionTasks(spill, tools.TaskOptions{
		Session: sess.ID,
		Ledger:  sess.Path(spawn.LedgerFile),
		PassEnv: st.Tools.PassEnv,
	})
}
