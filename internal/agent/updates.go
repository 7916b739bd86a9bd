package agent

// UpdateKind classifies a live update from a running turn.
type UpdateKind string

// Update kinds.
const (
	UpdateText      UpdateKind = "text"       // assistant text delta
	UpdateReasoning UpdateKind = "reasoning"  // reasoning delta
	UpdateToolStart UpdateKind = "tool_start" // a tool call is about to run
	UpdateToolEnd   UpdateKind = "tool_end"   // a tool call finished
	UpdateNotice    UpdateKind = "notice"     // a yolop notice
	// UpdateWarning is something the user must know before the turn's
	// work matters (the checkout's uncommitted changes the new session
	// does not see); it is sent before the turn runs, and not repeated
	// in the turn's result.
	UpdateWarning UpdateKind = "warning"
	// UpdateSetup is the worktree's setup command ([worktree] setup),
	// run before a new session's first turn: Tool describes it like a
	// command the agent ran (in progress with the output so far, then
	// completed or failed), Text is the output that just arrived.
	UpdateSetup UpdateKind = "setup"
	UpdateError UpdateKind = "error" // the turn failed
)

// Update is one live event of a running turn, for hosts to render.
type Update struct {
	Kind UpdateKind
	Text string
	Tool *ToolInfo
}

// ToolInfo describes a tool call for display.
type ToolInfo struct {
	ID      string
	Name    string
	Kind    string // read, edit, delete, search, execute, think, other
	Title   string // short human title, e.g. "bash: go test ./..."
	Args    string // raw JSON arguments
	Status  string // pending, in_progress, completed, failed, refused
	Result  string // what the model read (possibly truncated for display)
	IsError bool
	// Refused is the user's line when the sandbox refused what the call
	// tried (Status is then "refused"); "" otherwise.
	Refused string  `json:",omitempty"`
	Path    string  // file the call touched, when one
	OldText *string // for edits: previous content (nil = new file)
	NewText *string // for edits: new content (nil = deleted)
}

// ItemKind classifies a transcript item.
type ItemKind string

// Transcript item kinds.
const (
	ItemUser      ItemKind = "user"
	ItemAssistant ItemKind = "assistant"
	ItemReasoning ItemKind = "reasoning"
	ItemTool      ItemKind = "tool"
	ItemNotice    ItemKind = "notice"
	ItemError     ItemKind = "error"
)

// Item is one entry of the active branch's transcript, materialized from
// the event log (for resume, session/load and restores).
type Item struct {
	Kind ItemKind
	Turn string // checkpoint id of the turn ("" for session-level notices)
	Text string
	Tool *ToolInfo
}

// ToolStatus is the final status of a tool call: refused when the sandbox
// refused what it tried (whatever the command's exit code), failed for a
// problem the model can fix, else completed.
func ToolStatus(isError bool, refused string) string {
	switch {
	case refused != "":
		return "refused"
	case isError:
		return "failed"
	}
	return "completed"
}

// NoticeSink turns a turn's update callback into a sink of notices
// (UpdateNotice): nil for a caller that takes no updates.
func NoticeSink(onUpdate func(Update)) func(string) {
	if onUpdate == nil {
		return nil
	}
	return func(s string) { onUpdate(Update{Kind: UpdateNotice, Text: s}) }
}

// Warner tells what a turn warns of before it runs: as an UpdateWarning,
// or, for a caller that takes no updates (OnUpdate nil), kept in Early for
// the turn's result.
type Warner struct {
	OnUpdate func(Update)
	Early    []string
}

// Warn tells text.
func (w *Warner) Warn(text string) {
	if w.OnUpdate != nil {
		w.OnUpdate(Update{Kind: UpdateWarning, Text: text})
		return
	}
	w.Early = append(w.Early, text)
}
