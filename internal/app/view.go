package app

import (
	"errors"

	"github.com/yolop-dev/yolop/internal/agent/system"
	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
)

// view is a session opened for reading only (Read when it
// cannot be opened for writing): it takes no lock, repairs nothing and
// writes nothing. Listing works, with files_changed read straight from
// git's objects; every turn and restore is refused with the reason.
type view struct {
	sess *session.Session
	ctl  *checkpoint.Controller
	why  string
	// notices are said once by hosts that do not show the read-only
	// reason themselves (print mode).
	notices []string
}

// openView opens o.sessionID for reading; why says why it could not be
// opened for writing, cause (when not nil) is the error that said so and
// goes with an error of the view's own. notices are said once by hosts
// that do not show the reason themselves.
func openView(o options, why string, cause error, notices ...string) (state, error) {
	sess, ctl, err := catalog.OpenView(o.DataDir, o.sessionID, why)
	if err != nil && cause != nil {
		return nil, errors.Join(cause, err)
	}
	if err != nil {
		return nil, err
	}
	return &view{sess: sess, ctl: ctl, why: why, notices: notices}, nil
}

func (v *view) id() string                       { return v.sess.ID }
func (v *view) Checkpoints() command.Checkpoints { return v.ctl }
func (v *view) Background() command.Tasks        { return tools.NoTasks{} }
func (v *view) ContextReport() string {
	return "The session is " + v.ctl.ReadOnly() + "; it sends nothing to the model.\n" + system.Instructions(v.sess.Workspace())().Report()
}
func (v *view) info(prov provider.Provider) Info {
	in := diskInfo(prov, v.sess.ID, v.sess.Workspace(), v.ctl)
	in.ReadOnly = true
	in.Repairs, in.Notices = v.sess.Repaired(), v.notices
	return in
}
