package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// Summary describes one entry of <data-dir>/sessions for listings.
type Summary struct {
	ID  string
	Dir string
	// Workspace is the decoded workspace.json; zero when Problem says it
	// could not be read.
	Workspace Workspace
	// Modified is the modification time of events.jsonl (last activity).
	Modified time.Time
	// Problem says why the entry cannot be opened as a session ("" when it
	// looks healthy). Listing never skips an entry silently.
	Problem string
	// Unused: a healthy session with no event at all: opened (ACP
	// session/new) and never used. Hosts leave it out of listings and of
	// "the most recent session"; it can still be opened by its id.
	Unused bool
}

// List returns every entry of <dataDir>/sessions, newest first (by
// creation time; entries whose time is unknown sort last). It takes no
// locks and writes nothing. A missing sessions directory is an empty list.
func List(dataDir string) ([]Summary, error) {
	parent := SessionsDir(dataDir)
	entries, err := os.ReadDir(parent)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	out := make([]Summary, 0, len(entries))
	created := make(map[string]time.Time, len(entries))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue // editor and tool droppings, never a session
		}
		sum, when := summarize(parent, e)
		// To the millisecond, as ids hold it: a session whose
		// workspace.json cannot be read is dated by its id, and must not
		// sort before one made later in the same millisecond (ids made
		// in one millisecond still sort in the order they were made).
		created[sum.ID] = when.Truncate(time.Millisecond)
		out = append(out, sum)
	}
	slices.SortFunc(out, func(a, b Summary) int {
		if c := created[b.ID].Compare(created[a.ID]); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out, nil
}

func summarize(parent string, e os.DirEntry) (Summary, time.Time) {
	id := e.Name()
	sum := Summary{ID: id, Dir: filepath.Join(parent, id)}
	when := idTime(id)
	if err := checkID(id); err != nil {
		sum.Problem = "not a session: " + err.Error()
		return sum, when
	}
	if !e.IsDir() {
		sum.Problem = fmt.Sprintf("not a session: %s is not a directory", sum.Dir)
		return sum, when
	}
	ws, err := readWorkspace(sum.Dir, id)
	if err != nil {
		sum.Problem = err.Error()
		if errors.Is(err, os.ErrNotExist) {
			sum.Problem = WorkspaceFile + " is missing (incomplete session)"
		}
	} else {
		sum.Workspace = ws
		if !ws.Created.IsZero() {
			when = ws.Created
		}
	}
	fi, err := os.Lstat(filepath.Join(sum.Dir, EventsFile))
	switch {
	case err != nil && sum.Problem == "":
		sum.Problem = fmt.Sprintf("%s: %v", EventsFile, err)
	case err == nil && !fi.Mode().IsRegular() && sum.Problem == "":
		sum.Problem = fmt.Sprintf("%s is not a regular file (%s)", EventsFile, fi.Mode().Type())
	case err == nil:
		sum.Modified = fi.ModTime()
		sum.Unused = fi.Size() == 0 && sum.Problem == ""
	}
	return sum, when
}

// idTime is the creation time encoded in an "s_<ulid>" id, or zero.
func idTime(id string) time.Time {
	rest, ok := strings.CutPrefix(id, "s_")
	if !ok {
		return time.Time{}
	}
	u, err := ulid.ParseStrict(strings.ToUpper(rest))
	if err != nil {
		return time.Time{}
	}
	return ulid.Time(u.Time()).UTC()
}
