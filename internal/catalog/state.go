package catalog

import "strings"

// StateKind says whether a saved session can be used.
type StateKind int

// The kinds of State.
const (
	// StateOK: turns and restores work.
	StateOK StateKind = iota
	// StateReadOnly: the session refuses turns and restores (damaged
	// logs, a newer format); listing and replay work.
	StateReadOnly
	// StateProblem: the session's description cannot be read; it can be
	// removed, not resumed.
	StateProblem
	// StateRepoMissing: the session's repository is gone; listing and
	// replay work, turns and restores do not.
	StateRepoMissing
)

// State is a saved session's state: its kind and, for every kind but
// StateOK, why. Listings and JSON show it as one string, "ok",
// "read-only: …", "problem: …" or "repository missing: …".
type State struct {
	Kind   StateKind
	Detail string
}

// statePrefixes are the words each kind's string starts with.
var statePrefixes = map[StateKind]string{
	StateReadOnly:    "read-only: ",
	StateProblem:     "problem: ",
	StateRepoMissing: "repository missing: ",
}

func (s State) String() string {
	if p, ok := statePrefixes[s.Kind]; ok {
		return p + s.Detail
	}
	return "ok"
}

// MarshalText makes the JSON of a State its string (as text, so the
// encoder's HTML escaping setting applies to it as to every other string).
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a State's string back.
func (s *State) UnmarshalText(b []byte) error {
	text := string(b)
	for k, p := range statePrefixes {
		if d, ok := strings.CutPrefix(text, p); ok {
			*s = State{Kind: k, Detail: d}
			return nil
		}
	}
	*s = State{}
	return nil
}
