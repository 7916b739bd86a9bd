package checkpoint

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yolop-dev/yolop/internal/fault"
)

// Mode names which state a restore changes.
type Mode string

// Restore modes. The UI always names the state a mode will change.
const (
	ModeBoth         Mode = "both"
	ModeConversation Mode = "conversation"
	ModeWorkspace    Mode = "workspace"
)

// ParseMode accepts the three mode names and a few aliases. The empty
// string means "the default for the target" and is returned as "".
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return "", nil
	case "both", "all", "conversation+workspace":
		return ModeBoth, nil
	case "conversation", "conv", "chat", "context":
		return ModeConversation, nil
	case "workspace", "files", "code", "ws":
		return ModeWorkspace, nil
	}
	return "", &Error{Code: CodeBadMode, Msg: fmt.Sprintf("unknown mode %q: use both, conversation or workspace", s)}
}

// HasConversation reports whether the mode moves the conversation head.
func (m Mode) HasConversation() bool { return m == ModeBoth || m == ModeConversation }

// HasWorkspace reports whether the mode restores files.
func (m Mode) HasWorkspace() bool { return m == ModeBoth || m == ModeWorkspace }

// Describe names the states the mode changes, for previews.
func (m Mode) Describe() string {
	switch m {
	case ModeBoth:
		return "conversation and workspace"
	case ModeConversation:
		return "conversation only (files stay as they are)"
	case ModeWorkspace:
		return "workspace only (the conversation stays as it is)"
	}
	return string(m)
}

// Short names the states the mode changes without explanation, for
// notices that say what stayed as it was separately.
func (m Mode) Short() string {
	switch m {
	case ModeBoth:
		return "conversation and workspace"
	case ModeConversation:
		return "conversation only"
	case ModeWorkspace:
		return "workspace only"
	}
	return string(m)
}

// RedoHint ends every restore notice. It is true until the next turn
// starts (a turn clears the redo slot); hosts that keep old notices on
// screen drop it from them once it no longer holds.
const RedoHint = "/redo undoes this until the next turn."

// Action is what a preview was asked for.
type Action string

// Actions.
const (
	ActionRewind Action = "rewind"
	ActionUndo   Action = "undo"
	ActionRedo   Action = "redo"
)

// Request selects a restore: /rewind <cp> [mode], /undo or /redo.
type Request struct {
	Action Action
	Target string // checkpoint id for rewind ("cp3"; "3" is accepted)
	Mode   Mode   // "" = default
	// OnConflict is what a restore in place does where the user's changes
	// overlap the agent's: OnConflictKeep, OnConflictMarkers or
	// OnConflictOverwrite. It is bound into the preview's token.
	OnConflict string
}

// Row is one line of a checkpoint listing.
type Row struct {
	ID string `json:"id"`
	// Title is the prompt's first line, shortened for lists; Prompt is the
	// whole prompt, exactly as sent, or its first timeline.PromptKept
	// bytes when it is longer: PromptBytes is then the whole length.
	Title        string    `json:"title"`
	Prompt       string    `json:"prompt"`
	PromptBytes  int64     `json:"prompt_bytes,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	Status       string    `json:"status"`
	FilesChanged int       `json:"files_changed"`
	Workspace    bool      `json:"workspace"`
	Reason       string    `json:"reason"`
	Abandoned    bool      `json:"abandoned,omitempty"`
	// LeftOut names the files the checkpoint's snapshot does not hold
	// for their size (larger than [workspace] max_file_size): the
	// checkpoint is partial, and a restore leaves them as they are.
	LeftOut []string `json:"left_out,omitempty"`
}

// TurnRef names a turn in a preview.
type TurnRef struct {
	ID     string `json:"id"`
	Title  string `json:"title"`  // the prompt's first line, shortened
	Prompt string `json:"prompt"` // the whole prompt, or its start (see Row)
	// PromptBytes is the whole prompt's length when Prompt is its start.
	PromptBytes int64 `json:"prompt_bytes,omitempty"`
}

// PathChange is one path a workspace restore will change.
type PathChange struct {
	Path string `json:"path"`
	// PathBytes holds the exact bytes of a path that is not valid UTF-8
	// (JSON shows Path with replacement characters); base64 in JSON.
	PathBytes []byte `json:"path_bytes,omitempty"`
	Change    string `json:"change"` // added, modified, deleted, type_changed, mode_changed
	// Ignored is set for a path the restore writes that the ignore rules
	// in force then ignore (a rule added outside the workspace since the
	// checkpoint, e.g. to .git/info/exclude): it is restored byte for
	// byte as an ignored file, which later checkpoints leave out.
	Ignored bool `json:"ignored,omitempty"`
	// Outcome is what a restore in place does to the path: restored,
	// merged, kept, conflict or overwritten (snapshot.Outcome); "" in a
	// session that owns its worktree, where every path is restored. Why
	// says why a path is kept or overwritten ("changed since", "binary",
	// "symlink", ...).
	Outcome string `json:"outcome,omitempty"`
	Why     string `json:"why,omitempty"`
}

// NewPathChange describes a changed path, keeping the exact bytes of a
// name that is not valid UTF-8.
func NewPathChange(path, change string) PathChange {
	pc := PathChange{Path: path, Change: change}
	if !utf8.ValidString(path) {
		pc.PathBytes = []byte(path)
	}
	return pc
}

// JSONTime is how JSON output writes a time: RFC 3339 in UTC with at most
// millisecond precision.
func JSONTime(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// Warning is something the user should know before confirming.
type Warning struct {
	Kind      string `json:"kind"` // changed_outside_turns, external_effects, effects_outside_workspace, conversation_only, no_recovery_snapshot, partial_checkpoint
	Path      string `json:"path"`
	PathBytes []byte `json:"path_bytes,omitempty"` // as in PathChange
	// Turn and Tool name, for external_effects, the turn that called a
	// tool acting outside the workspace and that tool; Turn and Message,
	// for effects_outside_workspace, the turn whose commands could change
	// things a restore does not undo, and what.
	Turn    string `json:"turn,omitempty"`
	Tool    string `json:"tool,omitempty"`
	Message string `json:"message,omitempty"`
}

// WarnEffectsOutside is the warning kind for a turn leaving the branch
// whose commands ran with the sandbox off, or could write the declared
// caches or use the network.
const WarnEffectsOutside = "effects_outside_workspace"

// WarnConversationOnly is the warning kind for a restore that names no
// mode and restores only the conversation because its checkpoint has no
// workspace snapshot (its capture failed).
const WarnConversationOnly = "conversation_only"

// WarnPartial is the warning kind for a restore to a checkpoint whose
// snapshot left files out for their size: they stay as they are.
const WarnPartial = "partial_checkpoint"

// WarnNoRecovery is the warning kind for a conversation-only restore that
// goes ahead although the current files could not be captured: no
// recovery checkpoint of them is kept.
const WarnNoRecovery = "no_recovery_snapshot"

// Preview describes exactly what a confirmed restore will change.
type Preview struct {
	Action         Action       `json:"action"`
	Target         string       `json:"target"`
	Mode           Mode         `json:"mode"`
	TurnsLeaving   []TurnRef    `json:"turns_leaving"`
	TurnsReturning []TurnRef    `json:"turns_returning,omitempty"`
	Paths          []PathChange `json:"paths"`
	Warnings       []Warning    `json:"warnings"`
	Excluded       []string     `json:"excluded"`
	// Token confirms this preview once.
	Token string `json:"-"`
	// Command is the slash command that confirms it, e.g.
	// "/rewind cp2 both --confirm k3F9x2".
	Command string `json:"-"`
	// Recovery is the id of the recovery checkpoint holding the current
	// state (e.g. "r3").
	Recovery string `json:"-"`
	// Branch and BranchLeft name the branch a /branch preview enters and
	// the one it leaves; for a rewind to a checkpoint of an abandoned
	// branch, the branch that holds it and the active one.
	Branch     string `json:"branch,omitempty"`
	BranchLeft string `json:"branch_left,omitempty"`
	// InPlace says the restore works in the user's own checkout: Paths
	// carry outcomes, and OnConflict is the choice bound into the token.
	InPlace    bool   `json:"in_place,omitempty"`
	OnConflict string `json:"on_conflict,omitempty"`
}

// NoOp reports whether confirming would change nothing.
func (p *Preview) NoOp() bool {
	if len(p.TurnsLeaving) > 0 || len(p.TurnsReturning) > 0 {
		return false
	}
	for _, pc := range p.Paths {
		if pc.Outcome != "kept" {
			return false
		}
	}
	return true
}

// Restored reports an applied restore.
type Restored struct {
	Action       Action `json:"action"`
	Target       string `json:"target"`
	Mode         Mode   `json:"mode"`
	PathsChanged int    `json:"paths_changed"`
	// Prompt is the selected turn's original prompt, put back in the input
	// editor after a conversation restore ("" otherwise).
	Prompt string `json:"prompt"`
	// Notice is the restore notice added to the transcript.
	Notice string `json:"notice"`
	// Warning says what went wrong after the restore itself succeeded
	// (the notice could not be written to the event log, so the model is
	// not told that files changed under it). Hosts show it.
	Warning string `json:"warning,omitempty"`
	// Paths are the outcomes of a restore in place, path by path (kept
	// paths included); nil in a session that owns its worktree.
	Paths []PathChange `json:"paths,omitempty"`
}

// Error codes; stable, used in JSON output. They are fault's table's
// (fault.Of reads them from an *Error).
const (
	CodeBadMode        = string(fault.BadMode)
	CodeUnknownCheckpt = string(fault.UnknownCheckpoint)
	// CodeAbandoned is no longer emitted: a rewind to a checkpoint of an
	// abandoned branch previews switching to that branch and rewinding
	// there. Kept so scripts that name it still compile and match.
	CodeAbandoned        = string(fault.Abandoned)
	CodeNoWorkspace      = string(fault.NoWorkspace)
	CodeNothingToUndo    = string(fault.NothingToUndo)
	CodeNothingToRedo    = string(fault.NothingToRedo)
	CodeUnknownToken     = string(fault.UnknownToken)
	CodeTokenMismatch    = string(fault.TokenMismatch)
	CodeTokenUsed        = string(fault.TokenUsed)
	CodeTokenExpired     = string(fault.TokenExpired)
	CodeStalePreview     = string(fault.StalePreview)
	CodeConversationMove = string(fault.ConversationMoved)
	CodeWriterActive     = string(fault.WriterActive)
	CodeTurnRunning      = string(fault.TurnRunning)
	CodeReadOnly         = string(fault.ReadOnly)
	CodeCaptureFailed    = string(fault.CaptureFailed)
	CodeRestoreFailed    = string(fault.RestoreFailed)
	// CodeBlocked: something no snapshot holds (an ignored file) is where
	// the restore must write; nothing was changed.
	CodeBlocked = string(fault.RestoreBlocked)
)

// Error is a refusal the user can act on. Nothing was changed.
type Error struct {
	Code string
	Msg  string
	Err  error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// FaultCode is the error's code in the one table of failures.
func (e *Error) FaultCode() fault.Code { return fault.Code(e.Code) }

// CodeOf returns the code of a *Error in err's chain, or "".
func CodeOf(err error) string {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}
