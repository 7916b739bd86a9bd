package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/search"
)

// searchOptions are the flags of `yolop sessions search`.
type searchOptions struct {
	repo, all     bool
	abandonedOnly bool
	regex         bool
	limit         int
}

func newSessionsSearchCmd(o *rootOptions) *cobra.Command {
	so := &searchOptions{}
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Search every session's prompts, replies, tool calls, results and changed paths, on active and abandoned branches",
		Long: `Search every session's history: prompts, assistant text, tool calls and
results, notices and the paths each turn changed, on active and abandoned
branches alike. Inside a git repository only its sessions are searched
(--all searches every session); outside one, all are.

The query is plain text (regular-expression characters match themselves)
unless --regex is given. Case is ignored unless the query has a capital
letter. Abandoned content is shown to you only; it never enters a model's
context. To return to an abandoned hit, /rewind its checkpoint in its
session: the preview names the branch holding it and switches there
(/branches lists them all).`,
		Example: `  yolop sessions search 'parser'
  yolop sessions search --all --abandoned-only 'TODO'
  yolop sessions search --regex 'fix(ed)? the (lexer|parser)'`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.Usagef("sessions search takes one QUERY (quote it when it has spaces), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runSessionsSearch(c, o, so, args[0])
		},
	}
	cmd.Flags().BoolVar(&so.repo, "repo", false, "search only the sessions of the current repository (the default inside one)")
	cmd.Flags().BoolVar(&so.all, "all", false, "search every session")
	cmd.Flags().BoolVar(&so.abandonedOnly, "abandoned-only", false, "show only hits on abandoned branches")
	cmd.Flags().BoolVar(&so.regex, "regex", false, "treat QUERY as an RE2 regular expression")
	cmd.Flags().IntVar(&so.limit, "limit", 200, "show at most this many hits, newest first (0 = all)")
	return cmd
}

func runSessionsSearch(c *cobra.Command, o *rootOptions, so *searchOptions, query string) error {
	dataDir, err := o.resolveDataDir()
	if err != nil {
		return o.report(err)
	}
	res, scope, err := catalog.SearchSessions(c.Context(), catalog.SearchOptions{DataDir: dataDir, Dir: o.f.Flags.Dir, Query: query, Regex: so.regex, AbandonedOnly: so.abandonedOnly, Repo: so.repo, All: so.all, Limit: so.limit})
	if err != nil {
		return o.report(err) // a bad query is a usage error (catalog.BadQueryError)
	}
	if o.f.Flags.OutputFormat == "json" {
		// The same bytes writeJSON would write, without reflection: with
		// --limit 0 a result can hold hundreds of thousands of hits.
		return res.WriteJSON(o.f.IO.Out)
	}
	for _, p := range res.Problems {
		fmt.Fprintln(o.f.IO.ErrOut, "yolop: warning:", p)
	}
	where := "every session"
	if scope != "" {
		where = "the sessions of " + scope
	}
	if len(res.Hits) == 0 {
		fmt.Fprintf(o.f.IO.Out, "No matches for %q in %s (%d searched).\n", query, where, res.Sessions)
		if scope != "" {
			fmt.Fprintln(o.f.IO.Out, "Search every session with --all.")
		}
		return nil
	}
	tw := tabwriter.NewWriter(o.f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tCHECKPOINT\tBRANCH\tTIME\tKIND\tSNIPPET")
	for _, h := range res.Hits {
		cp := h.Checkpoint
		if cp == "" {
			cp = "-"
		}
		branch := h.Branch
		if h.Branch == search.BranchAbandoned && h.BranchID != "" {
			branch += " " + h.BranchID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", h.SessionID, cp, branch, h.Time.Local().Format("2006-01-02 15:04"), h.Kind, command.DisplayText(h.Snippet))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.More > 0 {
		fmt.Fprintf(o.f.IO.Out, "… %d more %s; narrow the query or use --limit 0 to see all.\n", res.More, map[bool]string{true: "hit", false: "hits"}[res.More == 1])
	}
	for _, h := range res.Hits {
		if h.Branch == search.BranchAbandoned && h.Checkpoint != "" {
			which := "the branch holding it"
			if h.BranchID != "" {
				which = "branch " + h.BranchID
			}
			fmt.Fprintf(o.f.IO.Out, "Back to an abandoned hit: `%s -p '/rewind %s'` previews switching to %s; nothing changes until you confirm.\n", o.sessionCommand(h.SessionID), h.Checkpoint, which)
			break
		}
	}
	return nil
}
