package timeline

import (
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/yolop-dev/yolop/internal/session/jsonl"
)

// RecordVersion is the format version of timeline records.
const RecordVersion = 1

// Record types.
const (
	TypeCheckpointCreated = "checkpoint.created"
	TypeTurnCompleted     = "turn.completed"
	TypeRestoreStarted    = "restore.started"
	TypeHeadMoved         = "head.moved"
	TypeRestoreAborted    = "restore.aborted"
	TypeRedoCleared       = "redo.cleared"
)

// typeCorrupt marks, inside a record slice, that the file's committed
// prefix is damaged after the records before it. OpenLog and ReadRecords
// append it so that Build of what they return is read-only: a damaged
// prefix is never silently skipped. It is never written (Append refuses
// it like any unknown type).
const typeCorrupt = "corrupt"

// Turn statuses.
const (
	StatusCompleted   = "completed"
	StatusFailed      = "failed"
	StatusCancelled   = "cancelled"
	StatusInterrupted = "interrupted"
)

// Restore modes.
const (
	ModeBoth         = "both"
	ModeConversation = "conversation"
	ModeWorkspace    = "workspace"
)

// MaxPaths bounds the paths a turn.completed record lists, so that a turn
// that touched a generated tree does not bloat the journal.
const MaxPaths = 500

// ErrCorrupt is wrapped by every *CorruptError.
var ErrCorrupt = jsonl.ErrCorrupt

// CorruptError locates an untrustworthy record.
type CorruptError = jsonl.CorruptError

// SnapshotRef names a workspace snapshot: a tree and the private ref that
// keeps it from garbage collection.
type SnapshotRef struct {
	Tree string `json:"tree"`
	Ref  string `json:"ref"`
}

// Record is one line of timeline.jsonl. Which fields are set depends on
// Type.
type Record struct {
	V    int       `json:"v"`
	Type string    `json:"type"`
	Time time.Time `json:"ts"`

	// checkpoint.created (Checkpoint also on turn.completed)
	Checkpoint string `json:"checkpoint,omitempty"`
	Parent     string `json:"parent,omitempty"` // head when the checkpoint was made; "" = root
	SeqBefore  int64  `json:"seq_before,omitempty"`
	Prompt     string `json:"prompt,omitempty"`
	// PromptBytes is the length of the whole prompt when Prompt keeps only
	// its start (see ShortPrompt); 0 when Prompt is the whole prompt. The
	// whole text is always the turn's user.message event.
	PromptBytes  int64        `json:"prompt_bytes,omitempty"`
	Snapshot     *SnapshotRef `json:"snapshot,omitempty"` // nil = conversation only
	CaptureError string       `json:"capture_error,omitempty"`
	// LeftOut are files the snapshot does not hold for their size
	// (larger than [workspace] max_file_size) although no ignore rule
	// leaves them out: the checkpoint is partial.
	LeftOut []string `json:"left_out,omitempty"`
	// Sandbox is the sandbox level the turn's commands ran under (off,
	// write, strict); "" in records written before it was recorded.
	Sandbox string `json:"sandbox,omitempty"`

	// turn.completed
	FinalSeq int64        `json:"final_seq,omitempty"`
	Status   string       `json:"status,omitempty"`
	End      *SnapshotRef `json:"end,omitempty"` // end-of-turn snapshot
	// EndError says why the end-of-turn capture failed (End is then nil);
	// the turn's changed files are unknown.
	EndError string `json:"end_error,omitempty"`
	// FilesChanged is the number of paths that differ between the
	// checkpoint's snapshot and End, recorded so listings run no git.
	// Absent in records written before it existed (and when either
	// snapshot is missing).
	FilesChanged *int `json:"files_changed,omitempty"`
	// Paths are the paths the turn changed (its snapshot against its end
	// snapshot), whoever changed them: edit tools or shell commands. At
	// most MaxPaths are kept; PathsMore counts the rest.
	Paths     []string `json:"paths,omitempty"`
	PathsMore int      `json:"paths_more,omitempty"`

	// restore.started, head.moved, restore.aborted
	Restore       string       `json:"restore,omitempty"` // restore id, e.g. "r3"
	Target        string       `json:"target,omitempty"`  // checkpoint rewound to; "" for redo
	Mode          string       `json:"mode,omitempty"`
	OldHead       string       `json:"old_head,omitempty"`
	NewHead       string       `json:"new_head,omitempty"`
	AbandonedHead string       `json:"abandoned_head,omitempty"`
	Recovery      *SnapshotRef `json:"recovery,omitempty"`
	TargetTree    string       `json:"target_tree,omitempty"`
	Redo          bool         `json:"redo,omitempty"`
	// FilesTree (head.moved) is the verified tree of the workspace after
	// the restore as captures see it, when it differs from TargetTree:
	// files restored that ignore rules from outside the workspace now
	// leave out.
	FilesTree string `json:"files_tree,omitempty"`

	// redo.cleared, restore.aborted
	Reason string `json:"reason,omitempty"`

	// corrupt is set only on the in-memory marker (typeCorrupt).
	corrupt *CorruptError
}

var errNotObject = errors.New("not a JSON object")

// ParseRecord decodes one line. It only checks the syntax (a JSON object
// with fields of the right JSON types); whether the record makes sense
// after the ones before it is Build's job, so that a well-formed record of
// an unknown type or version makes the timeline read-only instead of
// being dropped as a torn tail.
func ParseRecord(line []byte) (Record, error) {
	if r, ok := fastRecord(line); ok {
		return r, nil
	}
	var r Record
	if !jsonl.IsObject(line) {
		return r, errNotObject
	}
	// Unmarshal, unlike a Decoder, rejects trailing bytes after the object.
	err := json.Unmarshal(line, &r)
	return r, err
}

func corruptMarker(c *CorruptError) Record {
	return Record{V: RecordVersion, Type: typeCorrupt, Reason: c.Error(), corrupt: c}
}

// PromptKept is how much of a prompt a checkpoint.created record keeps:
// enough for every title and listing. A longer prompt (a pasted log, a
// generated file) is kept whole only in the event log, so that the
// timeline, its listings and every open of the session stay small.
const PromptKept = 4 << 10

// ShortPrompt returns what a checkpoint.created record keeps of prompt:
// the prompt itself and 0 when it fits in PromptKept bytes, else its
// first PromptKept bytes or fewer, cut before a character that does not
// fit, and the whole prompt's length.
func ShortPrompt(prompt string) (kept string, whole int64) {
	if len(prompt) <= PromptKept {
		return prompt, 0
	}
	cut := PromptKept
	for cut > 0 && !utf8.RuneStart(prompt[cut]) {
		cut--
	}
	return prompt[:cut], int64(len(prompt))
}
