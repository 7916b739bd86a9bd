package cli

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
	"github.com/yolop-dev/yolop/internal/host/acp"
	"github.com/yolop-dev/yolop/internal/host/tui"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/mcp"
)

// acpOpener opens app sessions for the ACP host.
type acpOpener struct {
	base app.Options
	open func(context.Context, app.Options) (*app.Session, error)
}

func (a acpOpener) New(ctx context.Context, cwd string, servers []mcp.Server) (acp.Session, error) {
	o := a.base
	// The worktree is claimed (or checked out) detached as soon as the
	// session opens; the session, its branch named from the first prompt,
	// is made at that prompt. A session opened and never used leaves
	// nothing behind but its worktree, given back as a spare.
	o.Dir, o.Early = cwd, true
	o.MCP = append(append([]mcp.Server(nil), o.MCP...), servers...)
	o.ClientMCP = len(servers) > 0
	s, err := a.open(ctx, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (a acpOpener) Load(ctx context.Context, id, cwd string, servers []mcp.Server) (acp.Session, error) {
	o := a.base
	o.SessionID = id
	o.MCP = append(append([]mcp.Server(nil), o.MCP...), servers...)
	o.ClientMCP = len(servers) > 0
	if cwd != "" {
		o.Dir = cwd
	}
	s, err := a.open(ctx, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func runACP(ctx context.Context, o *rootOptions, opts app.Options) error {
	err := acp.Serve(ctx, o.f.IO.In, o.f.IO.Out, acpOpener{base: opts, open: o.f.Open}, o.f.IO.ErrOut)
	if err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

func runTUI(ctx context.Context, o *rootOptions, opts app.Options) error {
	_, noColor := os.LookupEnv("NO_COLOR")
	topts := tui.Options{In: o.f.IO.In, Out: o.f.IO.Out, NoColor: noColor}
	pick := o.resume
	// The worktree is made while the user types the first prompt.
	opts.Early = true
	back := "" // the session /resume was typed in
	left := "" // the session /resume closed, named if the picker quits
	// note says in the picker why the session chosen last did not open.
	note := ""
	for {
		if pick {
			topts.Back, topts.Note = back, note
			id, err := tui.Pick(ctx, pickSource(opts.DataDir, opts.Dir), topts)
			if err != nil {
				return err
			}
			if id == "" && back == "" {
				if left != "" {
					fmt.Fprintf(o.f.IO.ErrOut, "Continue session %s with: yolop --session %s\n", left, left)
				}
				return nil // Esc from yolop -r: nothing opened, nothing to say
			}
			if id == "" {
				id = back // Esc from /resume: back where the user was
			}
			opts.SessionID, opts.Continue, note = id, false, ""
		}
		s, err := o.f.Open(ctx, opts)
		if err != nil {
			if pick && ctx.Err() == nil {
				// Locked by another process, damaged, gone: say so in the
				// picker and let the user choose again. When it is the
				// session to go back to, Esc then quits instead.
				note = fmt.Sprintf("%s did not open: %v", opts.SessionID, err)
				if opts.SessionID == back {
					back = ""
				}
				continue
			}
			return err
		}
		err = tui.Run(ctx, s, topts)
		existed := s.Exists()
		id, info := s.ID(), s.Info()
		// The session is closed (its lock released, its tasks stopped)
		// before the picker shows or the process ends.
		s.Close()
		if errors.Is(err, tui.ErrResume) {
			// /resume: the picker again, then the chosen session.
			pick = true
			if existed {
				back, left = id, id
			} else {
				back = ""
			}
			continue
		}
		if existed {
			fmt.Fprintf(o.f.IO.ErrOut, "Continue this session with: yolop --session %s\n", id)
			if info.Branch != "" {
				fmt.Fprintf(o.f.IO.ErrOut, "Its files are in %s (branch %s). Bring them home: %s\n", info.ActiveRoot, info.Branch, land.WaysHome(id))
			}
		}
		return err
	}
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
			res, _, err := catalog.SearchSessions(ctx, catalog.SearchOptions{DataDir: dataDir, Dir: dir, Query: strings.TrimSpace(query), All: true, Limit: 2000})
			if err != nil {
				var bq *catalog.BadQueryError
				if !errors.As(err, &bq) {
					return nil, err
				}
			} else {
				for _, h := range res.Hits {
					if _, ok := match[h.SessionID]; !ok {
						match[h.SessionID] = fmt.Sprintf("%s %s (%s): %s", h.Checkpoint, h.Kind, h.Branch, command.DisplayText(h.Snippet))
					}
				}
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
