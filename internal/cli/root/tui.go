package root

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/host/tui"
	"github.com/yolop-dev/yolop/internal/land"
)

// tuiLoop runs the terminal UI over one session after another: /resume
// closes the session and shows the picker, and the session chosen there
// opens.
type tuiLoop struct {
	o     *RootOptions
	env   app.Env
	req   app.Request // the session to open next
	topts tui.Options
	pick  bool   // show the picker before opening
	back  string // the session /resume was typed in
	left  string // the session /resume closed, named if the picker quits
	note  string // why the session chosen last did not open, for the picker
}

func runTUI(o *RootOptions, env app.Env) error {
	_, noColor := os.LookupEnv("NO_COLOR")
	// The worktree is made while the user types the first prompt.
	l := &tuiLoop{o: o, env: env, req: o.request(app.Early), topts: tui.Options{In: o.IO.In, Out: o.IO.Out, NoColor: noColor}, pick: o.Resume}
	for {
		if l.pick {
			if quit, err := l.choose(); quit || err != nil {
				return err
			}
		}
		s, err := o.Open(o.Ctx, l.env, l.req)
		if err != nil {
			if l.pick && o.Ctx.Err() == nil {
				l.refused(err)
				continue
			}
			return err
		}
		if again, err := l.run(s); !again {
			return err
		}
	}
}

// choose shows the picker and takes the session chosen; quit says the
// user left it with nothing to open.
func (l *tuiLoop) choose() (quit bool, err error) {
	l.topts.Back, l.topts.Note = l.back, l.note
	id, err := tui.Pick(l.o.Ctx, pickSource(l.env.DataDir, l.env.Dir), l.topts)
	if err != nil {
		return false, err
	}
	if id == "" && l.back == "" {
		if l.left != "" {
			fmt.Fprintf(l.o.IO.ErrOut, "Continue session %s with: yolop --session %s\n", l.left, l.left)
		}
		return true, nil // Esc from yolop -r: nothing opened, nothing to say
	}
	if id == "" {
		id = l.back // Esc from /resume: back where the user was
	}
	l.req, l.note = app.Resume{ID: id}, ""
	return false, nil
}

// refused keeps why the chosen session did not open (locked by another
// process, damaged, gone) for the picker, where the user chooses again.
// When it is the session to go back to, Esc then quits instead.
func (l *tuiLoop) refused(err error) {
	id := ""
	if r, ok := l.req.(app.Resume); ok {
		id = r.ID
	}
	l.note = fmt.Sprintf("%s did not open: %v", id, err)
	if id == l.back {
		l.back = ""
	}
}

// run runs the terminal UI over s until it ends; again says /resume asked
// for the picker.
func (l *tuiLoop) run(s *app.Session) (again bool, err error) {
	err = tui.Run(l.o.Ctx, s, l.topts)
	existed := s.Exists()
	id, info := s.ID(), s.Info()
	// The session is closed (its lock released, its tasks stopped)
	// before the picker shows or the process ends.
	s.Close()
	if errors.Is(err, tui.ErrResume) {
		// /resume: the picker again, then the chosen session.
		l.pick = true
		if existed {
			l.back, l.left = id, id
		} else {
			l.back = ""
		}
		return true, nil
	}
	if existed {
		fmt.Fprintf(l.o.IO.ErrOut, "Continue this session with: yolop --session %s\n", id)
		if info.Branch != "" {
			fmt.Fprintf(l.o.IO.ErrOut, "Its files are in %s (branch %s). Bring them home: %s\n", info.ActiveRoot, info.Branch, land.WaysHome(id))
		}
	}
	return false, err
}

// pickSource feeds the resume picker: every session that can be opened,
// the one used last first; a query keeps those whose title, id or
// repository holds it, and those whose history does (session search over
// every session, with the first hit as the reason).
func pickSource(dataDir, dir string) tui.PickSource {
	return func(ctx context.Context, query string) ([]tui.PickRow, error) {
		rows, err := catalog.ListSessions(dataDir)
		if err != nil {
			return nil, err
		}
		q := strings.ToLower(strings.TrimSpace(query))
		match := map[string]string{}
		if q != "" {
			if match, err = historyMatches(ctx, dataDir, dir, strings.TrimSpace(query)); err != nil {
				return nil, err
			}
		}
		now := time.Now()
		var out []tui.PickRow
		for _, r := range rows {
			if r.State.Kind == catalog.StateProblem {
				continue
			}
			repo := r.RepoRoot
			if repo == "" {
				repo = r.ActiveRoot
			}
			why, hit := match[r.SessionID]
			if q != "" && !hit && !strings.Contains(strings.ToLower(r.Title+" "+r.SessionID+" "+repo), q) {
				continue
			}
			out = append(out, tui.PickRow{ID: r.SessionID, Title: r.Title, Repo: repo, LastUsed: cmdutil.Ago(r.LastUsed, now), Turns: r.Turns, Match: why})
		}
		return out, nil
	}
}

// historyMatches searches every session's history for query and gives
// each session with a hit its first one, as the reason it is listed. A
// query the search refuses (too long, say) matches no history; titles can
// still match it.
func historyMatches(ctx context.Context, dataDir, dir, query string) (map[string]string, error) {
	match := map[string]string{}
	res, _, err := catalog.SearchSessions(ctx, catalog.SearchOptions{DataDir: dataDir, Dir: dir, Query: query, All: true, Limit: 2000})
	if err != nil {
		var bq *catalog.BadQueryError
		if errors.As(err, &bq) {
			return match, nil
		}
		return nil, err
	}
	for _, h := range res.Hits {
		if _, ok := match[h.SessionID]; !ok {
			match[h.SessionID] = fmt.Sprintf("%s %s (%s): %s", h.Checkpoint, h.Kind, h.Branch, command.DisplayText(h.Snippet))
		}
	}
	return match, nil
}
