package cmdutil

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/fault"
)

// The edge (cli.Run) reports every failure from the code its error
// carries (fault.Of and fault's table). The errors below only say how a
// failure reaches it; none of them chooses a code.

// ShownError is a failure already reported (its JSON object or its text
// is out): only its exit status, its code's, remains.
type ShownError struct{ Code fault.Code }

func (e *ShownError) Error() string { return fmt.Sprintf("%s (exit %d)", e.Code, e.Code.Exit()) }

// Shown is err once the command has reported it itself: the edge exits
// with the status of err's code and prints nothing.
func Shown(err error) error { return &ShownError{Code: fault.Of(err)} }

// ShownAs is the result of a host's run that reported its own failure,
// with that failure's code ("" when there was none: nil).
func ShownAs(code fault.Code) error {
	if code == "" {
		return nil
	}
	return &ShownError{Code: code}
}

// ToldError is a command's own failure, reported as it is: not read as an
// interruption when the context was cancelled, and given no usage hint.
type ToldError struct{ Err error }

func (e *ToldError) Error() string { return e.Err.Error() }
func (e *ToldError) Unwrap() error { return e.Err }

// Told returns err as the command's own failure; the edge prints it in
// the selected format, with its code and exit status.
func Told(err error) error { return &ToldError{Err: err} }

// ToldAfter is Told for a failure that follows from one a host has
// already reported with code: it keeps that code.
func ToldAfter(code fault.Code, err error) error { return Told(fault.With(code, err)) }

// Usagef is a usage error: bad flags or arguments (exit 2, code usage,
// and a hint to run --help unless it is Told).
func Usagef(format string, args ...any) error {
	return &command.UsageError{Msg: fmt.Sprintf(format, args...)}
}

// FlagError makes cobra's flag parsing errors usage errors.
func FlagError(_ *cobra.Command, err error) error {
	return &command.UsageError{Msg: err.Error()}
}

// ErrorJSON is the error contract of a JSON result: the code and the
// message, as the one object of a failed invocation holds them and as a
// result that fails beside its outcomes (apply) carries them.
type ErrorJSON struct {
	Code  fault.Code `json:"code"`
	Error string     `json:"error"`
}

// ErrorOf is err in the error contract, with code.
func ErrorOf(err error, code fault.Code) ErrorJSON {
	return ErrorJSON{Code: code, Error: command.ErrorText(err)}
}

// ErrorWithItsCode is err in the error contract with its own code.
func ErrorWithItsCode(err error) ErrorJSON { return ErrorOf(err, fault.Of(err)) }
