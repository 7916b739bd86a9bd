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
	ran := map[string]bool{}
	for _, ev := range c.cfg.Store.Events() {
		if ev.Type != agent.EventToolResult || ev.Turn == "" {
			continue
		}
		var d struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(ev.Data, &d) == nil && d.Name == "bash" {
			ran[ev.Turn] = true
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
			Message: fmt.Sprintf("effects outside the workspace are not undone: turn %s %s", id, what)})
	}
	return out
}
