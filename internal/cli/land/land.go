// Package land is `yolop diff`, `yolop apply` and `yolop commit`: a
// session's work brought home. The work itself is internal/land's, reached
// through the session (internal/land.Lander).
package land

import (
	"context"

	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/land"
)

// LandOptions are what diff, apply and commit share: the session and how
// to open it.
type LandOptions struct {
	IO    *cmdutil.IOStreams
	Flags *cmdutil.GlobalFlags
	// Open opens session id, or the latest of this repository for "" (it
	// names that one on stderr).
	Open func(ctx context.Context, id string) (land.Lander, error)

	Ctx       context.Context
	SessionID string // "" = the latest session of this repository
}

func newLandOptions(f *cmdutil.Factory) LandOptions {
	return LandOptions{IO: f.IO, Flags: f.Flags, Open: f.OpenLandOrLatest}
}

// parsed completes the options from the command's context and argument.
func (o *LandOptions) parsed(ctx context.Context, args []string) {
	o.Ctx = ctx
	if len(args) == 1 {
		o.SessionID = args[0]
	}
}

// opened is the session a command works on, with what opening it
// repaired: every command tells the repairs (stderr in text, "notes" in
// JSON).
type opened struct {
	land.Lander
	repairs []string
}

// open opens the session; in text the repairs are told at once.
func (o *LandOptions) open() (*opened, error) {
	s, err := o.Open(o.Ctx, o.SessionID)
	if err != nil {
		return nil, err
	}
	op := &opened{Lander: s, repairs: s.Repairs()}
	if !o.Flags.JSON() {
		cmdutil.TellRepairs(o.IO.ErrOut, op.repairs)
	}
	return op, nil
}

// fail returns err as the command's failure (s is nil before the session
// opened); the edge reports it with its code and exit status.
func (o *LandOptions) fail(s *opened, err error) error {
	if o.Flags.JSON() && s != nil {
		// The error object has no room for them: repairs go to stderr.
		cmdutil.TellRepairs(o.IO.ErrOut, s.repairs)
	}
	return cmdutil.Told(err)
}

// notes are the notes of a JSON result with the repairs made at open
// first.
func (s *opened) notes(more []string) []string {
	if len(s.repairs) == 0 {
		return more
	}
	return append(append([]string(nil), s.repairs...), more...)
}
