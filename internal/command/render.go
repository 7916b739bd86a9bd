package command

import (
	"fmt"
	"github.com/yolop-dev/yolop/internal/git"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/yolop-dev/yolop/internal/checkpoint"
)

// PreviewText renders a restore preview for text hosts (print mode, ACP):
// what the restore changes, what it leaves alone and what to watch out for.
// Hosts add their own line saying how to confirm it.
func PreviewText(pv *checkpoint.Preview) string {
	var b strings.Builder
	switch pv.Action {
	case checkpoint.ActionBranch:
		left := pv.BranchLeft
		if left == "" {
			left = "the active branch"
		}
		fmt.Fprintf(&b, "Branch preview — enter %s as it was left, leave %s — restores: %s\n", pv.Branch, left, pv.Mode.Describe())
	case checkpoint.ActionRedo:
		fmt.Fprintf(&b, "Redo preview — brings back what the last restore abandoned — restores: %s\n", pv.Mode.Describe())
	case checkpoint.ActionUndo:
		fmt.Fprintf(&b, "Undo preview — back to before %s — restores: %s\n", pv.Target, pv.Mode.Describe())
	default:
		switch {
		case pv.Branch != "" && pv.Mode.HasConversation():
			// A checkpoint of an abandoned branch: one preview, one token.
			left := pv.BranchLeft
			if left == "" {
				left = "the active branch"
			}
			fmt.Fprintf(&b, "Rewind preview — %s is on abandoned branch %s: switch to %s and go back to before %s, leave %s — restores: %s\n", pv.Target, pv.Branch, pv.Branch, pv.Target, left, pv.Mode.Describe())
		case pv.Branch != "":
			fmt.Fprintf(&b, "Rewind preview — the files of before %s (on abandoned branch %s); the conversation stays — restores: %s\n", pv.Target, pv.Branch, pv.Mode.Describe())
		default:
			fmt.Fprintf(&b, "Rewind preview — back to before %s — restores: %s\n", pv.Target, pv.Mode.Describe())
		}
	}
	partial := false
	for _, w := range pv.Warnings {
		if w.Kind == checkpoint.WarnConversationOnly || w.Kind == checkpoint.WarnNoRecovery {
			fmt.Fprintf(&b, "Note: %s.\n", w.Message)
		}
		if w.Kind == checkpoint.WarnPartial && !partial {
			// One note for all the files the checkpoint left out.
			partial = true
			fmt.Fprintf(&b, "Note: %s.\n", w.Message)
		}
	}
	turns := func(title, note string, list []checkpoint.TurnRef) {
		fmt.Fprintf(&b, "\n%s (%d%s):\n", title, len(list), note)
		for _, t := range list {
			fmt.Fprintf(&b, "  %-4s %s\n", t.ID, oneLine(t.Prompt))
		}
	}
	if pv.Mode.HasConversation() {
		if len(pv.TurnsLeaving) == 0 && len(pv.TurnsReturning) == 0 {
			b.WriteString("\nConversation: unchanged\n")
		}
		if len(pv.TurnsLeaving) > 0 {
			turns("Turns leaving the active conversation", "; kept, /redo brings them back", pv.TurnsLeaving)
		}
		if len(pv.TurnsReturning) > 0 {
			turns("Turns returning to the conversation", "", pv.TurnsReturning)
		}
	} else {
		b.WriteString("\nConversation: unchanged\n")
	}
	if pv.Mode.HasWorkspace() && pv.InPlace {
		inPlaceFiles(&b, pv)
	} else if pv.Mode.HasWorkspace() {
		if len(pv.Paths) == 0 {
			b.WriteString("\nFiles: no changes (the workspace already matches)\n")
		} else {
			fmt.Fprintf(&b, "\nFiles that will change (%d):\n", len(pv.Paths))
			ignored := 0
			for _, c := range pv.Paths {
				note := ""
				if c.Ignored {
					note = "  (restored as an ignored file)"
					ignored++
				}
				fmt.Fprintf(&b, "  %-12s %s%s\n", ChangeLabel(c.Change), git.DisplayPath(c.Path), note)
			}
			if ignored > 0 {
				fmt.Fprintf(&b, "%s\n", IgnoredNote(ignored))
			}
		}
		var outside []checkpoint.Warning
		for _, w := range pv.Warnings {
			if w.Kind == "changed_outside_turns" {
				outside = append(outside, w)
			}
		}
		if len(outside) > 0 {
			b.WriteString("\nChanged outside agent turns since the last turn ended (the recovery checkpoint keeps them):\n")
			for _, w := range outside {
				fmt.Fprintf(&b, "  %s\n", git.DisplayPath(w.Path))
			}
		}
		if len(pv.Excluded) > 0 {
			b.WriteString("\nLeft alone (ignored or excluded):\n")
			for _, e := range pv.Excluded {
				fmt.Fprintf(&b, "  %s\n", git.DisplayPath(e))
			}
		}
	} else {
		b.WriteString("\nFiles: unchanged\n")
	}
	var external []checkpoint.Warning
	for _, w := range checkpoint.MergeEffects(pv.Warnings) {
		if w.Kind != "changed_outside_turns" && w.Kind != checkpoint.WarnConversationOnly && w.Kind != checkpoint.WarnNoRecovery && w.Kind != checkpoint.WarnPartial && !inPlaceWarning(w.Kind) {
			external = append(external, w)
		}
	}
	if len(external) > 0 {
		b.WriteString("\nEffects outside the workspace are not undone:\n")
		for _, w := range external {
			switch w.Kind {
			case "external_effects":
				fmt.Fprintf(&b, "  %s called %s\n", w.Turn, w.Tool)
			case checkpoint.WarnEffectsOutside:
				fmt.Fprintf(&b, "  %s\n", strings.TrimPrefix(w.Message, "effects outside the workspace are not undone: "))
			default:
				fmt.Fprintf(&b, "  %s: %s %s\n", w.Kind, w.Turn, git.DisplayPath(w.Path))
			}
		}
	}
	if pv.NoOp() {
		b.WriteString("\nNothing would change; confirming records the restore anyway.\n")
	}
	if pv.Recovery != "" && pv.Mode.HasWorkspace() {
		fmt.Fprintf(&b, "\nThe current files are saved as recovery checkpoint %s; /redo brings them back after confirming.\n", pv.Recovery)
	}
	return b.String()
}

// inPlaceWarning reports the warnings inPlaceFiles shows.
func inPlaceWarning(kind string) bool {
	return kind == "head_moved" || kind == "git_changed" || kind == "no_end_capture"
}

// OutcomeText describes a restore in place's outcome for one path.
func OutcomeText(pc checkpoint.PathChange) string {
	switch pc.Outcome {
	case "merged":
		return "merged: the agent's change undone, your other edits kept"
	case "conflict":
		return "conflict markers written: your edits overlap the agent's"
	case "overwritten":
		return "overwritten: your edits since are in the recovery checkpoint"
	case "kept":
		why := pc.Why
		if why == "" {
			why = "changed since"
		}
		return "kept as it is (" + why + ")"
	}
	return "restored exactly"
}

// inPlaceFiles renders the files of a preview in place: what changes with
// its outcome, then what is kept because the user changed it too.
func inPlaceFiles(b *strings.Builder, pv *checkpoint.Preview) {
	b.WriteString("\nIn place: only the agent's own changes are undone; a file no undone turn changed is never touched.\n")
	var change, kept []checkpoint.PathChange
	for _, c := range pv.Paths {
		if c.Outcome == "kept" {
			kept = append(kept, c)
		} else {
			change = append(change, c)
		}
	}
	if len(change) == 0 {
		b.WriteString("\nFiles: no changes\n")
	} else {
		fmt.Fprintf(b, "\nFiles that will change (%d):\n", len(change))
		for _, c := range change {
			fmt.Fprintf(b, "  %-12s %s  (%s)\n", changeText(c.Change), git.DisplayPath(c.Path), OutcomeText(c))
		}
	}
	if len(kept) > 0 {
		since := pv.Target
		if since == "" {
			since = "the last restore"
		}
		fmt.Fprintf(b, "\nChanged by you since %s — kept (%d):\n", since, len(kept))
		for _, c := range kept {
			why := c.Why
			if why == "" {
				why = "changed since"
			}
			fmt.Fprintf(b, "  %s  (%s)\n", git.DisplayPath(c.Path), why)
		}
		b.WriteString("  Add --on-conflict markers to write conflict markers instead, or --overwrite-mine to restore them anyway (the recovery checkpoint keeps your version).\n")
	}
	for _, w := range pv.Warnings {
		if inPlaceWarning(w.Kind) {
			fmt.Fprintf(b, "\nNote: %s\n", w.Message)
		}
	}
	var outside []checkpoint.Warning
	for _, w := range pv.Warnings {
		if w.Kind == "changed_outside_turns" {
			outside = append(outside, w)
		}
	}
	if len(outside) > 0 {
		b.WriteString("\nChanged outside agent turns since the last turn ended (yours: kept unless an undone turn changed the same lines; edits made while a turn ran count as the turn's):\n")
		for _, w := range outside {
			fmt.Fprintf(b, "  %s\n", git.DisplayPath(w.Path))
		}
	}
	if len(pv.Excluded) > 0 {
		b.WriteString("\nLeft alone (ignored or excluded):\n")
		for _, e := range pv.Excluded {
			fmt.Fprintf(b, "  %s\n", git.DisplayPath(e))
		}
	}
}

// changeText is a change kind as people read it.
func changeText(kind string) string {
	switch kind {
	case "type_changed":
		return "type changed"
	case "mode_changed":
		return "mode changed"
	}
	return kind
}

// IgnoredNote explains the paths a preview marks as restored as ignored
// files.
func IgnoredNote(n int) string {
	if n == 1 {
		return "  This file is ignored now (a rule added since the checkpoint, e.g. in .git/info/exclude or your global excludes): it is restored byte for byte, but later checkpoints leave it out."
	}
	return "  These files are ignored now (a rule added since the checkpoint, e.g. in .git/info/exclude or your global excludes): they are restored byte for byte, but later checkpoints leave them out."
}

// BranchesText renders a branch listing for text hosts.
func BranchesText(rows []checkpoint.BranchRow, when func(time.Time) string) string {
	if len(rows) == 0 {
		return "No branches yet: every prompt you send adds a turn to the active branch.\n"
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BRANCH\tSTATE\tFORKED AFTER\tTURNS\tTIP\tLEFT\tTIP PROMPT")
	for _, r := range rows {
		state := "abandoned"
		if r.Active {
			state = "active"
		}
		from := r.ForkedFrom
		if from == "" {
			from = "(start)"
		}
		tip := r.Tip
		if tip == "" {
			tip = "(empty)"
		}
		left := "-"
		if r.LeftAt != nil {
			left = when(*r.LeftAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d (%d own)\t%s\t%s\t%s\n", r.ID, state, from, r.Turns, r.Own, tip, left, oneLine(r.TipPrompt))
	}
	tw.Flush()
	b.WriteString("\nSwitch with /branch <id> [both|conversation|workspace]; it shows a preview first, and /redo switches back.\n")
	return b.String()
}

// RetainedText renders the snapshot refs a session keeps: each recovery
// snapshot with why, and the turn snapshots as one count.
func RetainedText(list []checkpoint.Retained) string {
	if len(list) == 0 {
		return ""
	}
	var b strings.Builder
	turns := 0
	var applies []checkpoint.Retained
	for _, r := range list {
		switch r.Kind {
		case checkpoint.RetainedTurn:
			turns++
			continue
		case checkpoint.RetainedApply:
			applies = append(applies, r)
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nRecovery snapshots kept (refs/yolop/checkpoints/<session>/<name>):\n")
		}
		fmt.Fprintf(&b, "  %-5s %s\n", r.Name, r.Why)
	}
	if b.Len() == 0 {
		b.WriteString("\nRecovery snapshots kept: none.\n")
	}
	if turns > 0 {
		fmt.Fprintf(&b, "Turn snapshots kept for the life of the session: %s (cpN before each turn, end-cpN after it; --output-format json lists them).\n", checkpoint.Plural(turns, "ref", "refs"))
	}
	if len(applies) > 0 {
		b.WriteString("Captures of your checkout kept for yolop apply:\n")
		for _, r := range applies {
			fmt.Fprintf(&b, "  %s  %s\n", r.Name, r.Why)
		}
	}
	return b.String()
}

// oneLine keeps the first line of a prompt label.
func oneLine(s string) string {
	first, rest, more := strings.Cut(s, "\n")
	if more && strings.TrimSpace(rest) != "" && !strings.HasSuffix(first, "…") {
		first += " …"
	}
	return first
}

// DisplayText returns free text (a search snippet, a command's output)
// safe to print on a terminal as one line: control characters and invalid
// bytes are shown as escapes.
func DisplayText(s string) string { return git.DisplayText(s) }

// ChangeLabel is a path change for people: "type change" and "mode change"
// for the JSON words type_changed and mode_changed; the others as they are.
func ChangeLabel(c string) string {
	switch c {
	case "type_changed":
		return "type change"
	case "mode_changed":
		return "mode change"
	}
	return c
}
