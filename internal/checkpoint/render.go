package checkpoint

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// The one vocabulary for checkpoint rows. Every surface (print mode, ACP,
// the model's list, the TUI picker) takes its words from RowCells and
// ListText; a host chooses only the layout.

// EmptyList is what every surface says when the active branch has no
// checkpoint.
const EmptyList = "No checkpoints yet on the active branch."

// ListHint tells how to go on from a list.
const ListHint = "Preview a restore with /rewind <id> [both|conversation|workspace] (each checkpoint is the state before its turn)."

// RowCells are a checkpoint row's words.
type RowCells struct {
	ID        string // "cp3", "cp3 (abandoned)"
	Status    string // completed, failed, cancelled, interrupted, running
	Files     string // the number of files changed; "—" when there is no workspace snapshot to count from, "?" when the end capture failed
	FilesText string // "1 file", "2 files"; "files: —" or "files: unknown" when unknown
	Workspace string // "yes", "yes; <end capture failure>", "partial: left out <files>" or "conversation only: <reason>"
	Prompt    string // the prompt's label (first line)
}

// Cells returns the row's words.
func (r Row) Cells() RowCells {
	c := RowCells{ID: r.ID, Status: r.Status, Files: fmt.Sprint(r.FilesChanged), FilesText: Plural(r.FilesChanged, "file", "files"), Workspace: "yes", Prompt: label(r.Prompt)}
	if r.Abandoned {
		c.ID += " (abandoned)"
	}
	if !r.Workspace {
		reason := r.Reason
		if reason == "" {
			reason = "no workspace snapshot"
		}
		c.Workspace = "conversation only: " + reason
		c.Files, c.FilesText = "—", "files: —"
	} else if len(r.LeftOut) > 0 {
		c.Workspace = "partial: left out " + LeftOutList(r.LeftOut)
		if r.Reason != "" {
			c.Files, c.FilesText = "?", "files: unknown"
		}
	} else if r.Reason != "" {
		// The checkpoint is whole, but the turn's end capture failed: how
		// many files it changed is unknown, not zero.
		c.Workspace = "yes; " + r.Reason
		c.Files, c.FilesText = "?", "files: unknown"
	}
	return c
}

// LeftOutList names the files a partial checkpoint left out: the first
// three, then how many more.
func LeftOutList(paths []string) string {
	list := paths
	more := ""
	if len(list) > 3 {
		list, more = list[:3], fmt.Sprintf(" and %d more", len(paths)-3)
	}
	return strings.Join(list, ", ") + more
}

// PartialText says that checkpoint id is partial and which files it left
// out.
func PartialText(id string, leftOut []string) string {
	return fmt.Sprintf("checkpoint %s is partial: %s larger than [workspace] max_file_size left out (%s)", id, Plural(len(leftOut), "file", "files"), LeftOutList(leftOut))
}

// stayText says that the left-out files stay as they are.
func stayText(n int) string {
	if n == 1 {
		return "it stays as it is"
	}
	return "they stay as they are"
}

// WhenLocal is how a listing for a person dates a checkpoint: in local
// time, the same in print mode and ACP.
func WhenLocal(t time.Time) string { return t.Local().Format("Jan 2 15:04:05") }

// ListText renders rows as a table with a header, then the hint; when is
// how a host writes a row's time.
func ListText(rows []Row, when func(time.Time) string) string {
	if len(rows) == 0 {
		return EmptyList + "\n"
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWHEN\tSTATUS\tFILES\tWORKSPACE\tPROMPT")
	for _, r := range rows {
		c := r.Cells()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, when(r.CreatedAt), c.Status, c.Files, c.Workspace, c.Prompt)
	}
	tw.Flush()
	b.WriteString("\n" + ListHint + "\n")
	return b.String()
}

// Plural writes a count with the noun's singular or plural form.
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
