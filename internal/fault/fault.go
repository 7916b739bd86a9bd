// Package fault is the one table of the ways a yolop invocation fails: each
// Code is the JSON "code" a failure reports and names the exit status the
// process ends with. Errors carry their code (a Sentinel, or any error with
// a FaultCode method); the hosts read it with Of and render it, and never
// choose a code or an exit status themselves.
//
// The only exit status without a code is 141: the reader of yolop's output
// went away (a write failed with EPIPE), and nothing more is written.
package fault

import (
	"errors"
	"slices"
)

// Code is the stable name of a failure in JSON output.
type Code string

// The codes. Scripts match them: never rename one, only add.
const (
	// Error is any failure that has no code of its own.
	Error Code = "error"
	// Usage: bad flags, arguments or configuration; nothing ran.
	Usage Code = "usage"
	// Interrupted: the user stopped yolop (Ctrl+C, SIGINT, SIGTERM) or a
	// turn was cancelled.
	Interrupted Code = "interrupted"
	// Internal: the result could not even be encoded.
	Internal Code = "internal"

	// Turns.
	TurnFailed      Code = "turn_failed"
	TurnInterrupted Code = "turn_interrupted"

	// Restores (the checkpoint controller's refusals).
	BadMode           Code = "bad_mode"
	UnknownCheckpoint Code = "unknown_checkpoint"
	UnknownBranch     Code = "unknown_branch"
	// Abandoned is no longer emitted: a rewind to a checkpoint of an
	// abandoned branch previews switching to that branch. Kept so that
	// scripts naming it still match.
	Abandoned         Code = "abandoned_checkpoint"
	NoWorkspace       Code = "no_workspace"
	NothingToUndo     Code = "nothing_to_undo"
	NothingToRedo     Code = "nothing_to_redo"
	UnknownToken      Code = "unknown_token"
	TokenMismatch     Code = "token_mismatch"
	TokenUsed         Code = "token_used"
	TokenExpired      Code = "token_expired"
	StalePreview      Code = "stale_preview"
	ConversationMoved Code = "conversation_moved"
	WriterActive      Code = "writer_active"
	TurnRunning       Code = "turn_running"
	ReadOnly          Code = "read_only"
	CaptureFailed     Code = "capture_failed"
	RestoreFailed     Code = "restore_failed"
	RestoreBlocked    Code = "restore_blocked"

	// Sessions and the data directory.
	Locked                Code = "locked"
	UnknownSession        Code = "unknown_session"
	NoSession             Code = "no_session"
	DataDirInRepo         Code = "data_dir_in_repository"
	PromptTooLarge        Code = "prompt_too_large"
	CheckoutInUse         Code = "checkout_in_use"
	CheckoutBusy          Code = "checkout_busy"
	WorktreeConfigChanged Code = "worktree_config_changed"
	// A new session in a folder outside git.
	FolderTooBroad  Code = "folder_too_broad"
	DataDirInFolder Code = "data_dir_in_folder"

	// Bringing the work home (diff, apply, commit).
	Conflict        Code = "conflict"
	InTheWay        Code = "in_the_way"
	EditedSince     Code = "edited_since"
	SessionWorktree Code = "session_worktree"
	OtherRepo       Code = "other_repo"
	InPlace         Code = "in_place"
	BranchMoved     Code = "branch_moved"
	NothingToCommit Code = "nothing_to_commit"
	NoIdentity      Code = "no_identity"
	HookFailed      Code = "hook_failed"
	NotARepository  Code = "not_a_repository"
)

// Exit statuses.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitInterrupted = 130
	// ExitBrokenPipe is the status of a process killed by SIGPIPE: yolop's
	// reader went away.
	ExitBrokenPipe = 141
)

// Entry is one row of the table.
type Entry struct {
	Code Code
	Exit int
	// Means says when the code is reported.
	Means string
}

// table is the one table: every code a host can report, with its exit
// status.
var table = []Entry{
	{Error, ExitFailure, "any failure without a code of its own"},
	{Usage, ExitUsage, "bad flags, arguments, command syntax or configuration; nothing ran"},
	{Interrupted, ExitInterrupted, "stopped by the user (Ctrl+C, SIGINT, SIGTERM) or a cancelled turn; what was stopped was rolled back or kept as the message says"},
	{Internal, ExitFailure, "the result could not be encoded as JSON"},

	{TurnFailed, ExitFailure, "the model or a tool failed the turn"},
	{TurnInterrupted, ExitFailure, "the process running the turn died during it"},

	{BadMode, ExitFailure, "a restore mode or conflict choice that does not apply"},
	{UnknownCheckpoint, ExitFailure, "no such checkpoint in the session"},
	{UnknownBranch, ExitFailure, "no such branch, or the active one"},
	{Abandoned, ExitFailure, "no longer emitted (a rewind to an abandoned branch previews switching to it)"},
	{NoWorkspace, ExitFailure, "the restore or land needs file snapshots or a worktree the session does not have"},
	{NothingToUndo, ExitFailure, "no finished turn or apply to undo"},
	{NothingToRedo, ExitFailure, "no restore to redo"},
	{UnknownToken, ExitFailure, "the preview token names no preview"},
	{TokenMismatch, ExitFailure, "the token belongs to another preview"},
	{TokenUsed, ExitFailure, "the preview was confirmed already"},
	{TokenExpired, ExitFailure, "the preview can no longer be confirmed"},
	{StalePreview, ExitFailure, "the files changed since the preview"},
	{ConversationMoved, ExitFailure, "the conversation moved since the preview"},
	{WriterActive, ExitFailure, "a background task can still write the workspace"},
	{TurnRunning, ExitFailure, "a turn or /compact is running"},
	{ReadOnly, ExitFailure, "the session is read-only (damaged or broken journal)"},
	{CaptureFailed, ExitFailure, "the files could not be captured or compared; nothing was changed"},
	{RestoreFailed, ExitFailure, "the restore failed and was rolled back"},
	{RestoreBlocked, ExitFailure, "something no snapshot holds is where the restore must write; nothing was changed"},

	{Locked, ExitFailure, "another process holds the session or the checkout's apply lock"},
	{UnknownSession, ExitFailure, "no session with that id in the data directory"},
	{NoSession, ExitFailure, "-c found no session for this repository"},
	{DataDirInRepo, ExitFailure, "the data directory lies inside the repository's working tree"},
	{PromptTooLarge, ExitFailure, "the prompt is larger than a turn takes"},
	{CheckoutInUse, ExitFailure, "another in-place session is writing the checkout"},
	{CheckoutBusy, ExitFailure, "the checkout is in the middle of a git operation"},
	{WorktreeConfigChanged, ExitFailure, "the session worktree's git configuration changed under yolop"},
	{FolderTooBroad, ExitFailure, "a folder outside git that is $HOME, / or holds more than [workspace] max_files files, without --workspace in-place; nothing was created"},
	{DataDirInFolder, ExitFailure, "the data directory lies inside the folder outside git the session would snapshot; nothing was created"},

	{Conflict, ExitFailure, "the apply conflicts with the checkout"},
	{InTheWay, ExitFailure, "untracked or ignored files are where the apply must write"},
	{EditedSince, ExitFailure, "paths changed since the apply being undone"},
	{SessionWorktree, ExitFailure, "the target is another session's worktree, or a new session would start inside one"},
	{OtherRepo, ExitFailure, "the target is not a checkout of the session's repository"},
	{InPlace, ExitFailure, "the session works in the checkout: there is nothing to apply"},
	{BranchMoved, ExitFailure, "the session's worktree left its branch"},
	{NothingToCommit, ExitFailure, "the session changed nothing to commit"},
	{NoIdentity, ExitFailure, "git has no user identity configured"},
	{HookFailed, ExitFailure, "a commit hook refused the commit"},
	{NotARepository, ExitFailure, "the session works in a folder outside git: there is no branch to commit to"},
}

// Table returns every code with its exit status, in table order.
func Table() []Entry { return slices.Clone(table) }

// Exit is the exit status of a failure with code c (1 for a code not in the
// table).
func (c Code) Exit() int {
	for _, e := range table {
		if e.Code == c {
			return e.Exit
		}
	}
	return ExitFailure
}

// Known reports whether c is in the table.
func (c Code) Known() bool {
	return slices.ContainsFunc(table, func(e Entry) bool { return e.Code == c })
}

// Coder is an error that knows its code.
type Coder interface {
	error
	FaultCode() Code
}

// Of is the code of err: that of the outermost error in its chain that
// knows one, else Error ("" for nil).
func Of(err error) Code {
	if err == nil {
		return ""
	}
	var c Coder
	if errors.As(err, &c) {
		return c.FaultCode()
	}
	return Error
}

// Sentinel is an error value with a code, for errors.Is: the typed
// counterpart of errors.New. Its text keeps the package prefix
// ("land: conflicts"); hosts drop it when they show the message.
type Sentinel struct {
	code Code
	text string
}

// New returns a sentinel error with code and text.
func New(code Code, text string) *Sentinel { return &Sentinel{code: code, text: text} }

func (e *Sentinel) Error() string   { return e.text }
func (e *Sentinel) FaultCode() Code { return e.code }

// Plain returns a sentinel error without a code of its own, for
// errors.Is: a failure built from it reports Error, or the code a wrapper
// gives it. Like a Sentinel's, its text keeps the package prefix ("tools:
// unknown task"), which hosts drop when they show the message.
func Plain(text string) error { return &plain{text: text} }

type plain struct{ text string }

func (e *plain) Error() string { return e.text }

// IsSentinel reports whether err itself (not what it wraps) is a value
// made by New or Plain.
func IsSentinel(err error) bool {
	switch err.(type) {
	case *Sentinel, *plain:
		return true
	}
	return false
}

// With gives err the code c (err's own code, if any, is hidden).
func With(c Code, err error) error { return &coded{code: c, err: err} }

type coded struct {
	code Code
	err  error
}

func (e *coded) Error() string   { return e.err.Error() }
func (e *coded) Unwrap() error   { return e.err }
func (e *coded) FaultCode() Code { return e.code }
