package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// sessionJSON is one session in listings and `sessions show`.
type sessionJSON struct {
	SessionID  string    `json:"session_id"`
	Title      string    `json:"title"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
	Turns      int       `json:"turns"`
	RepoRoot   string    `json:"repo_root"`
	ActiveRoot string    `json:"active_root"`
	Worktree   string    `json:"worktree"`
	Branch     string    `json:"branch"`
	Workspace  bool      `json:"workspace"`
	Reason     string    `json:"reason"`
	State      string    `json:"state"` // ok, read-only: …, problem: …
	Dir        string    `json:"dir"`
}

func describeSession(dataDir string, sm session.Summary) sessionJSON {
	w := sm.Workspace
	out := sessionJSON{SessionID: sm.ID, Title: w.Title, Created: w.Created, Updated: w.Updated, RepoRoot: w.RepoRoot, ActiveRoot: w.ActiveRoot, Workspace: w.Kind == session.KindWorktree, Reason: w.NoWorkspaceReason, State: "ok", Dir: sm.Dir}
	if w.Worktree != nil {
		out.Worktree, out.Branch = w.Worktree.Path, w.Worktree.Branch
	}
	if sm.Problem != "" {
		out.State = "problem: " + sm.Problem
		return out
	}
	s, err := session.OpenReadOnly(dataDir, sm.ID)
	if err != nil {
		out.State = "problem: " + err.Error()
		return out
	}
	defer s.Close()
	// OpenReadOnly always refuses writes; only corruption makes the
	// session itself read-only.
	if s.Corruption() != nil {
		_, why := s.ReadOnly()
		out.State = "read-only: " + why
	}
	if recs, err := timeline.ReadRecords(s.Path(session.TimelineFile)); err == nil {
		st := timeline.Build(recs)
		out.Turns = len(st.ActiveChain())
		if st.ReadOnly {
			out.State = "read-only: " + st.ReadOnlyReason
		}
	}
	return out
}

func newSessionsCmd(o *rootOptions) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List sessions, newest first",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			dataDir, err := o.resolveDataDir()
			if err != nil {
				return err
			}
			list, err := session.List(dataDir)
			if err != nil {
				return err
			}
			rows := make([]sessionJSON, 0, len(list))
			for _, sm := range list {
				rows = append(rows, describeSession(dataDir, sm))
			}
			if format == "json" {
				return writeJSON(o, map[string]any{"sessions": rows})
			}
			if len(rows) == 0 {
				fmt.Fprintln(o.io.Out, "No sessions yet. Start one with `yolop` or `yolop -p PROMPT`.")
				return nil
			}
			tw := tabwriter.NewWriter(o.io.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tCREATED\tTURNS\tWORKTREE\tSTATE\tTITLE")
			for _, r := range rows {
				wt := r.Branch
				if wt == "" {
					wt = "(conversation only)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", r.SessionID, r.Created.Local().Format("2006-01-02 15:04"), r.Turns, wt, r.State, r.Title)
			}
			return tw.Flush()
		},
	}
	cmd.PersistentFlags().StringVar(&format, "output-format", "text", "text or json")
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one session: its worktree, branch and active turns",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dataDir, err := o.resolveDataDir()
			if err != nil {
				return err
			}
			sm, err := findSession(dataDir, args[0])
			if err != nil {
				return err
			}
			d := describeSession(dataDir, sm)
			if format == "json" {
				return writeJSON(o, d)
			}
			fmt.Fprintf(o.io.Out, "session     %s\ntitle       %s\ncreated     %s\nturns       %d (active branch)\nstate       %s\n", d.SessionID, d.Title, d.Created.Local().Format(time.RFC1123), d.Turns, d.State)
			if d.Branch != "" {
				fmt.Fprintf(o.io.Out, "worktree    %s\nbranch      %s  (merge it into your branch when the work is good: git merge %s)\nrepository  %s\n", d.Worktree, d.Branch, d.Branch, d.RepoRoot)
			} else {
				fmt.Fprintf(o.io.Out, "directory   %s\nworkspace   conversation only: %s\n", d.ActiveRoot, d.Reason)
			}
			if strings.HasPrefix(d.State, "read-only") {
				fmt.Fprintf(o.io.Out, "fork        yolop sessions fork %s  (read-only: replay works, turns and restores do not; a fork continues from the valid part)\n", d.SessionID)
			} else {
				fmt.Fprintf(o.io.Out, "resume      yolop --session %s\n", d.SessionID)
			}
			return nil
		},
	}
	var force bool
	rm := &cobra.Command{
		Use:   "rm ID",
		Short: "Remove a session, its worktree and its checkpoint refs (the branch is kept)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return removeSession(c.Context(), o, args[0], force)
		},
	}
	rm.Flags().BoolVar(&force, "force", false, "remove the worktree even with uncommitted changes")
	fork := &cobra.Command{
		Use:   "fork ID",
		Short: "Start a new session from the valid part of a (read-only) session",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return forkSession(c.Context(), o, args[0])
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List sessions, newest first (the same as `yolop sessions`)",
		Args:  cobra.NoArgs,
		RunE:  cmd.RunE,
	}
	cmd.AddCommand(list, show, rm, fork)
	return cmd
}

func findSession(dataDir, id string) (session.Summary, error) {
	list, err := session.List(dataDir)
	if err != nil {
		return session.Summary{}, err
	}
	for _, sm := range list {
		if sm.ID == id {
			return sm, nil
		}
	}
	return session.Summary{}, fmt.Errorf("no session %q in %s; `yolop sessions` lists them (%w)", id, session.SessionsDir(dataDir), session.ErrNotFound)
}

func writeJSON(o *rootOptions, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(o.io.Out, string(b))
	return err
}

func removeSession(ctx context.Context, o *rootOptions, id string, force bool) error {
	dataDir, err := o.resolveDataDir()
	if err != nil {
		return err
	}
	if _, err := findSession(dataDir, id); err != nil {
		return err
	}
	// Taking the lock proves no other process is using the session.
	s, err := session.Open(dataDir, id)
	if err != nil && !errors.Is(err, session.ErrCorrupt) {
		return err
	}
	ws := s.Workspace()
	if ws.Worktree != nil {
		m := &worktree.Manager{DataDir: dataDir}
		refs, err := m.Remove(ctx, worktree.Info{Path: ws.Worktree.Path, Branch: ws.Worktree.Branch, Base: ws.Worktree.Base, RepoRoot: ws.RepoRoot, CommonDir: ws.CommonDir}, id, force)
		if err != nil {
			s.Close()
			var de *worktree.DirtyError
			if errors.As(err, &de) {
				return fmt.Errorf("%w\nnothing was removed; commit or discard those changes, or use --force", err)
			}
			return err
		}
		fmt.Fprintf(o.io.Out, "removed worktree %s (branch %s kept) and %d checkpoint refs\n", ws.Worktree.Path, ws.Worktree.Branch, len(refs))
	}
	dir := s.Dir
	s.Close()
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	fmt.Fprintf(o.io.Out, "removed session %s\n", id)
	return nil
}

// forkSession starts a new session that carries the old one's active
// conversation (up to any corruption) as its history, in a fresh worktree
// that starts from the old worktree's branch.
func forkSession(ctx context.Context, o *rootOptions, id string) error {
	dataDir, err := o.resolveDataDir()
	if err != nil {
		return err
	}
	old, err := session.OpenReadOnly(dataDir, id)
	if err != nil {
		return err
	}
	defer old.Close()
	ws := old.Workspace()
	recs, _ := timeline.ReadRecords(old.Path(session.TimelineFile))
	st := timeline.Build(recs)
	// The fork belongs to the same checkout as the old session (so -c and
	// `sessions show` find it there) and its worktree starts from the old
	// worktree's current commit.
	dir, base := ws.ActiveRoot, ""
	if ws.Worktree != nil && ws.RepoRoot != "" {
		dir = ws.RepoRoot
		if out, err := git.New(ws.Worktree.Path).Run(ctx, "rev-parse", "--verify", "HEAD^{commit}"); err == nil {
			base = git.Trim(out)
		} else {
			base = ws.Worktree.Base
		}
	}
	pcfg, err := o.providerConfig()
	if err != nil {
		return err
	}
	s, err := app.Open(ctx, app.Options{DataDir: dataDir, Dir: dir, Base: base, Worktree: o.worktree, Provider: pcfg, Create: true})
	if err != nil {
		return err
	}
	defer s.Close()
	files := ""
	if ws.Worktree != nil {
		if _, err := os.Stat(ws.Worktree.Path); err == nil {
			n, err := s.CopyFilesFrom(ctx, ws.Worktree.Path)
			if err != nil {
				return fmt.Errorf("fork %s: copy its files: %w (the new session %s starts from its last commit)", id, err, s.ID())
			}
			files = fmt.Sprintf(", %d uncommitted paths carried over", n)
		}
	}
	copied := 0
	for _, ev := range old.Events() {
		if !st.InActiveRange(ev.Turn, ev.Seq) {
			continue
		}
		if err := s.Import(ev); err != nil {
			return err
		}
		copied++
	}
	_ = s.Agent().Note("", agent.NoticeData{Kind: "fork", Text: fmt.Sprintf("Forked from session %s (%d events of its active branch; its checkpoints stay with it).", id, copied)})
	s.Reseed()
	fmt.Fprintf(o.io.Out, "forked %s into %s (%d events%s)\ncontinue with: yolop --session %s\n", id, s.ID(), copied, files, s.ID())
	return nil
}
