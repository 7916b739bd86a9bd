package sessions

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/search"
)

// SearchOptions are what `yolop sessions search` reads.
type SearchOptions struct {
	IO      *cmdutil.IOStreams
	Flags   *cmdutil.GlobalFlags
	DataDir func() (string, error)

	Ctx           context.Context
	Query         string
	Repo, All     bool
	AbandonedOnly bool
	Regex         bool
	Limit         int
}

// NewCmdSearch makes `yolop sessions search`; runF, when set, runs instead
// of searchRun.
func NewCmdSearch(f *cmdutil.Factory, runF func(*SearchOptions) error) *cobra.Command {
	opts := &SearchOptions{IO: f.IO, Flags: f.Flags, DataDir: f.DataDir}
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
			opts.Ctx, opts.Query = c.Context(), args[0]
			if runF != nil {
				return runF(opts)
			}
			return searchRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Repo, "repo", false, "search only the sessions of the current repository (the default inside one)")
	cmd.Flags().BoolVar(&opts.All, "all", false, "search every session")
	cmd.Flags().BoolVar(&opts.AbandonedOnly, "abandoned-only", false, "show only hits on abandoned branches")
	cmd.Flags().BoolVar(&opts.Regex, "regex", false, "treat QUERY as an RE2 regular expression")
	cmd.Flags().IntVar(&opts.Limit, "limit", 200, "show at most this many hits, newest first (0 = all)")
	return cmd
}

func searchRun(opts *SearchOptions) error {
	dataDir, err := opts.DataDir()
	if err != nil {
		return cmdutil.Told(err)
	}
	// A bad query, --repo with --all and a negative --limit come back as
	// catalog.BadQueryError, a usage error.
	res, scope, err := catalog.SearchSessions(opts.Ctx, catalog.SearchOptions{DataDir: dataDir, Dir: opts.Flags.Dir, Query: opts.Query, Regex: opts.Regex, AbandonedOnly: opts.AbandonedOnly, Repo: opts.Repo, All: opts.All, Limit: opts.Limit})
	if err != nil {
		return cmdutil.Told(err)
	}
	if opts.Flags.JSON() {
		// The same bytes WriteJSON would write, without reflection: with
		// --limit 0 a result can hold hundreds of thousands of hits.
		return res.WriteJSON(opts.IO.Out)
	}
	for _, p := range res.Problems {
		fmt.Fprintln(opts.IO.ErrOut, "yolop: warning:", p)
	}
	where := "every session"
	if scope != "" {
		where = "the sessions of " + scope
	}
	if len(res.Hits) == 0 {
		fmt.Fprintf(opts.IO.Out, "No matches for %q in %s (%d searched).\n", opts.Query, where, res.Sessions)
		if scope != "" {
			fmt.Fprintln(opts.IO.Out, "Search every session with --all.")
		}
		return nil
	}
	return writeHits(opts.IO.Out, res, opts.Flags)
}

// writeHits prints the hits as a table, and how to go back to the first
// abandoned one.
func writeHits(w io.Writer, res *search.Result, flags *cmdutil.GlobalFlags) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
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
		fmt.Fprintf(w, "… %d more %s; narrow the query or use --limit 0 to see all.\n", res.More, map[bool]string{true: "hit", false: "hits"}[res.More == 1])
	}
	for _, h := range res.Hits {
		if h.Branch == search.BranchAbandoned && h.Checkpoint != "" {
			which := "the branch holding it"
			if h.BranchID != "" {
				which = "branch " + h.BranchID
			}
			fmt.Fprintf(w, "Back to an abandoned hit: `%s -p '/rewind %s'` previews switching to %s; nothing changes until you confirm.\n", flags.SessionCommand(h.SessionID), h.Checkpoint, which)
			break
		}
	}
	return nil
}
