package command

import (
	"regexp"
	"strings"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/secret"
)

// sentinelPrefix matches the package prefix of a sentinel error
// ("land: nothing to undo"): the code's convention, not the user's words.
var sentinelPrefix = regexp.MustCompile(`^[a-z]+: `)

// ErrorText is err's message as the user reads it, in every host: the
// package prefixes of the sentinel values in its chain are dropped
// ("land: nothing to undo: …" reads "nothing to undo: …"); nothing else
// of the message is. git's own prefix is kept: it names the program that
// failed.
func ErrorText(err error) string {
	msg := secret.Redact(err.Error())
	for _, s := range sentinels(err) {
		text := s.Error()
		p := sentinelPrefix.FindString(text)
		if p == "" || p == "git: " || !strings.Contains(msg, text) {
			continue
		}
		bare := text[len(p):]
		msg = strings.ReplaceAll(msg, text, bare)
	}
	return msg
}

// sentinels are the sentinel values at the leaves of err's chain (the
// fault.New and fault.Plain values it was built from). An errors.New
// value is a message, not a sentinel: its words stay as they are.
func sentinels(err error) []error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			if n := u.Unwrap(); n != nil {
				walk(n)
				return
			}
		case interface{ Unwrap() []error }:
			for _, n := range u.Unwrap() {
				walk(n)
			}
			return
		}
		if fault.IsSentinel(e) {
			out = append(out, e)
		}
	}
	walk(err)
	return out
}
