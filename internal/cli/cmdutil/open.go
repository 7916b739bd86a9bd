package cmdutil

import (
	"context"
	"errors"
	"fmt"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/land"
)

// ReadOrLatest opens session id, or the latest of this repository for
// "", for listing: for reading only when it cannot be opened for writing
// (app.Read); see openOrLatest.
func (f *Factory) ReadOrLatest(ctx context.Context, id string) (*app.Session, error) {
	return openOrLatest(ctx, f, id, app.Read{ID: id}, f.Open)
}

// OpenLandOrLatest opens session id, or the latest of this repository
// for "", for diff, apply and commit; see openOrLatest.
func (f *Factory) OpenLandOrLatest(ctx context.Context, id string) (land.Lander, error) {
	var req app.Request = app.Resume{ID: id}
	if id == "" {
		req = app.Continue{}
	}
	return openOrLatest(ctx, f, id, req, f.OpenLand)
}

// openOrLatest opens session id, or without one ("") the latest session of
// the current repository (-C DIR's), which it names on stderr: the one
// rule of every subcommand whose session id is optional (diff, apply,
// commit, checkpoints). req says how; the data directory, the provider
// and the directory come from the factory.
func openOrLatest[S interface{ ID() string }](ctx context.Context, f *Factory, id string, req app.Request, open func(context.Context, app.Env, app.Request) (S, error)) (S, error) {
	var none S
	dataDir, err := f.DataDir()
	if err != nil {
		return none, err
	}
	pcfg, err := f.Provider()
	if err != nil {
		return none, err
	}
	s, err := open(ctx, app.Env{DataDir: dataDir, Dir: f.Flags.Dir, Provider: pcfg}, req)
	latest := id == ""
	if err != nil {
		if latest && errors.Is(err, catalog.ErrNoSession) {
			// The app's words are for -c; here the id is what is missing.
			where := f.Flags.Dir
			if where == "" {
				where = "the current directory"
			}
			return none, &noSessionHere{where}
		}
		return none, err
	}
	if latest {
		fmt.Fprintf(f.IO.ErrOut, "session %s (the latest of this repository)\n", s.ID())
	}
	return s, nil
}

// noSessionHere is a diff, apply, commit or checkpoints without an id
// where no session was started; it matches catalog.ErrNoSession.
type noSessionHere struct{ where string }

func (e *noSessionHere) Error() string {
	return fmt.Sprintf("no session was started from %s; name one (`yolop sessions` lists them), or run this in its repository or with -C DIR", e.where)
}

func (e *noSessionHere) Unwrap() error { return catalog.ErrNoSession }
