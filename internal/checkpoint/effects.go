package checkpoint

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/yolop-dev/yolop/internal/agent"
)

// effectsOutsideLocked warns, for each turn a restore undoes that ran a
// shell command, what that command could have changed that no restore
// undoes: anything, with the sandbox off; the declared caches and the
// network at level write; the declared caches at level strict.
func (c *Controller) effectsOutsideLocked(turns []string) []Warning {
	if len(turns) == 0 {
		return nil
	}
	undone := make(map[string]bool, len(turns))
	for _, id := range turns {
		undone[id] = true
	}
	// A turn ran a shell command when its model asked for one: the call
	// is recorded before it runs, so a turn interrupted while the command
	// ran (no result recorded) counts too.
	ran := map[string]bool{}
	for _, ev := range c.cfg.Store.Events() {
		if !undone[ev.Turn] || ran[ev.Turn] {
			continue
		}
		switch ev.Type {
		case agent.EventAssistant:
			var d struct {
				Message struct {
					ToolCalls []struct {
						Name string `json:"name"`
					} `json:"tool_calls"`
				} `json:"message"`
			}
			if json.Unmarshal(ev.Data, &d) == nil {
				for _, tc := range d.Message.ToolCalls {
					if tc.Name == "bash" {
						ran[ev.Turn] = true
					}
				}
			}
		case agent.EventToolResult:
			var d struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(ev.Data, &d) == nil && d.Name == "bash" {
				ran[ev.Turn] = true
			}
		}
	}
	caches := "the declared caches"
	if len(c.cfg.Caches) > 0 {
		list := c.cfg.Caches
		if len(list) > 3 {
			list = append(append([]string(nil), list[:3]...), "…")
		}
		caches += " (" + strings.Join(list, ", ") + ")"
	}
	var out []Warning
	for _, id := range turns {
		cp := c.state.Checkpoints[id]
		if cp == nil || !ran[id] {
			continue
		}
		var what string
		switch cp.Sandbox {
		case "write":
			what = "ran shell commands that could write " + caches + " and use the network"
		case "strict":
			what = "ran shell commands that could write " + caches
		case "off":
			what = "ran shell commands with the sandbox off, which could write anywhere you can"
		default:
			what = "ran shell commands before yolop recorded sandbox levels, which may have written anywhere you can"
		}
		out = append(out, Warning{Kind: WarnEffectsOutside, Turn: id,
			Message: fmt.Sprintf("%sturn %s %s", effectsPrefix, id, what)})
	}
	return out
}

const effectsPrefix = "effects outside the workspace are not undone: "

// MergeEffects returns warnings for display: the per-turn warnings about
// effects outside the workspace that say the same thing become one
// ("turns cp1, cp2 ran shell commands that could …"), in the position of
// the first; every other warning is returned as it is. JSON output keeps
// one warning per turn.
func MergeEffects(ws []Warning) []Warning {
	type group struct {
		at    int
		turns []string
	}
	groups := map[string]*group{}
	var out []Warning
	for _, w := range ws {
		what, ok := effectsDetail(w)
		if !ok {
			out = append(out, w)
			continue
		}
		if g := groups[what]; g != nil {
			g.turns = append(g.turns, w.Turn)
			continue
		}
		groups[what] = &group{at: len(out), turns: []string{w.Turn}}
		out = append(out, w)
	}
	for what, g := range groups {
		if len(g.turns) > 1 {
			out[g.at].Message = fmt.Sprintf("%sturns %s %s", effectsPrefix, strings.Join(g.turns, ", "), what)
			out[g.at].Turn = ""
		}
	}
	return out
}

// effectsDetail returns what an effects-outside warning says after its
// turn id.
func effectsDetail(w Warning) (string, bool) {
	if w.Kind != WarnEffectsOutside || w.Turn == "" {
		return "", false
	}
	rest, ok := strings.CutPrefix(w.Message, effectsPrefix+"turn "+w.Turn+" ")
	return rest, ok
}
