package app

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/yolop-dev/yolop/internal/search"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// SearchHit and SearchResult are what `yolop sessions search` prints.
type (
	SearchHit    = search.Hit
	SearchResult = search.Result
)

// ErrBadQuery is wrapped by every query that cannot be searched (empty,
// too long, a regular expression that does not compile, --repo outside a
// repository); the command line maps it to a usage error.
var ErrBadQuery = errors.New("app: bad search")

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
func SearchSessions(ctx context.Context, o SearchOptions) (res *SearchResult, scope string, err error) {
	if o.Repo && o.All {
		return nil, "", fmt.Errorf("%w: use either --repo or --all, not both", ErrBadQuery)
	}
	if o.Limit < 0 {
		return nil, "", fmt.Errorf("%w: --limit must be 0 (all) or more, not %d", ErrBadQuery, o.Limit)
	}
	opts := search.Options{DataDir: o.DataDir, Query: o.Query, Regex: o.Regex, AbandonedOnly: o.AbandonedOnly, Limit: o.Limit}
	if !o.All {
		dir := o.Dir
		if dir == "" {
			if dir, err = os.Getwd(); err != nil {
				return nil, "", err
			}
		}
		repo, err := worktree.Detect(ctx, dir)
		switch {
		case err == nil:
			opts.Repo = repo.Root
		case o.Repo:
			return nil, "", fmt.Errorf("%w: --repo: %v; use --all to search every session", ErrBadQuery, err)
		}
	}
	res, err = search.Search(opts)
	if errors.Is(err, search.ErrEmptyQuery) || errors.Is(err, search.ErrQueryTooLong) || errors.Is(err, search.ErrBadRegex) {
		err = fmt.Errorf("%w: %w", ErrBadQuery, err)
	}
	return res, opts.Repo, err
}
