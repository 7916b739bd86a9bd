package catalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/search"
	"github.com/yolop-dev/yolop/internal/secret"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// BadQueryError is a search that cannot run as asked (an empty or too
// long query, a regular expression that does not compile, --repo outside
// a repository): a usage error.
type BadQueryError struct{ Err error }

// FaultCode is usage.
func (e *BadQueryError) FaultCode() fault.Code { return fault.Usage }

func (e *BadQueryError) Error() string { return e.Err.Error() }
func (e *BadQueryError) Unwrap() error { return e.Err }

func badQuery(format string, args ...any) error {
	return &BadQueryError{Err: fmt.Errorf(format, args...)}
}

// SearchOptions select what `yolop sessions search` covers.
type SearchOptions struct {
	DataDir string
	// Dir is where the search runs (default: the working directory); its
	// repository is the default scope.
	Dir           string
	Query         string
	Regex         bool
	AbandonedOnly bool
	// Repo limits the search to Dir's repository (an error outside one);
	// All searches every session. Neither: the repository inside one,
	// every session outside.
	Repo, All bool
	Limit     int
}

// SearchSessions searches every session's history in the chosen scope.
// It reads only: no lock is taken and nothing is written. Scope is the
// repository searched ("" for every session).
func SearchSessions(ctx context.Context, o SearchOptions) (res *search.Result, scope string, err error) {
	if o.Repo && o.All {
		return nil, "", badQuery("use either --repo or --all, not both")
	}
	if o.Limit < 0 {
		return nil, "", badQuery("--limit must be 0 (all) or more, not %d", o.Limit)
	}
	opts := search.Options{DataDir: o.DataDir, Query: o.Query, Regex: o.Regex, AbandonedOnly: o.AbandonedOnly, Limit: o.Limit}
	if !o.All {
		dir, err := config.WorkDir(o.Dir)
		if err != nil {
			return nil, "", err
		}
		repo, err := worktree.Detect(ctx, dir)
		switch {
		case err == nil:
			opts.Repo = repo.Root
		case o.Repo:
			return nil, "", badQuery("--repo: %v; use --all to search every session", err)
		}
	}
	// The settings' secrets become known, so that a session recorded
	// before a key was (or with a key a command encoded) shows none.
	if _, err := config.Settings(); err != nil {
		return nil, "", err
	}
	res, err = search.Search(opts)
	if errors.Is(err, search.ErrEmptyQuery) || errors.Is(err, search.ErrQueryTooLong) || errors.Is(err, search.ErrBadRegex) {
		err = &BadQueryError{Err: err}
	}
	if res != nil {
		for i := range res.Hits {
			res.Hits[i].Snippet = secret.Redact(res.Hits[i].Snippet)
		}
		res.Query = secret.Redact(res.Query)
	}
	return res, opts.Repo, err
}
