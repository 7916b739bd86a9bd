package tools

import (
	"strings"

	"github.com/yolop-dev/yolop/internal/sandbox"
)

// refusal explains what the sandbox refused in a command's output: the
// notes the model reads (sandboxNote, networkNote) and one line for the
// user. The line is "" unless the refusal is certain (a path outside the
// places commands may write, a ref git may not write, a port strict does
// not open): a "may have refused" guess is the model's to weigh, and
// telling the user of a refusal that did not happen would be worse than
// saying nothing.
func refusal(out string, st sandbox.Status, root string) (notes, summary string) {
	var lines []string
	for _, n := range []string{sandboxNote(out, st, root), networkNote(out, st)} {
		if n == "" {
			continue
		}
		notes += n
		// One note a line (a read-only path's and a write's may come
		// together).
		for _, l := range strings.Split(strings.TrimSuffix(n, "\n"), "\n") {
			if s := noteSummary(l); s != "" {
				lines = append(lines, s)
			}
		}
	}
	return notes, strings.Join(lines, "; ")
}

// noteSummary is the first clause of a certain refusal note ("the sandbox
// (level write) refused writing /etc/x"), "" for a guess.
func noteSummary(note string) string {
	s := strings.TrimPrefix(note, "note: ")
	if strings.Contains(s, " may have refused ") {
		return ""
	}
	head, _, _ := strings.Cut(s, ": ")
	head = strings.TrimSuffix(head, ", not the server")
	if strings.HasSuffix(head, "refused a write of git's") {
		head += " (a ref outside the session's branch)"
	}
	return head
}
