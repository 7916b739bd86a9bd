package cmdutil

import (
	"context"
	"errors"
	"fmt"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/catalog"
)

// OpenOrLatest opens session id, or the latest of this repository for
// "", as a live session with o's other options (checkpoints asks for
// ForReading); see openOrLatest.
func (f *Factory) OpenOrLatest(ctx context.Context, id string, o app.Options) (*app.Session, error) {
	return openOrLatest(ctx, f, id, o, f.Open)
}

// OpenLandOrLatest opens session id, or the latest of this repository
// for "", for diff, apply and commit; see openOrLatest.
func (f *Factory) OpenLandOrLatest(ctx context.Context, id string) (app.Lander, error) {
	return openOrLatest(ctx, f, id, app.Options{}, f.OpenLand)
}

// openOrLatest opens session id, or without one ("") the latest session of
// the current repository (-C DIR's), which it names on stderr: the one
// rule of every subcommand whose session id is optional (diff, apply,
// commit, checkpoints). o is completed with the data directory, the
// provider, the directory and the session.
func openOrLatest[S interface{ ID() string }](ctx context.Context, f *Factory, id string, o app.Options, open func(context.Context, app.Options) (S, error)) (S, error) {
	var none S
	dataDir, err := f.DataDir()
	if err != nil {
		return none, err
	}
	pcfg, err := f.Provider()
	if err != nil {
		return none, err
	}
	o.DataDir, o.Dir, o.Provider, o.SessionID = dataDir, f.Flags.Dir, pcfg, id
	o.Continue = id == ""
	s, err := open(ctx, o)
	if err != nil {
		if o.Continue && errors.Is(err, catalog.ErrNoSession) {
			// The app's words are for -c; here the id is what is missing.
			where := f.Flags.Dir
			if where == "" {
				where = "the current directory"
			}
			return none, &noSessionHere{where}
		}
		return none, err
	}
	if o.Continue {
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
