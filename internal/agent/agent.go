// Package agent runs turns: it streams a model's answer, runs the tool calls
// it asks for in the session's active root, persists every step to the
// event log, and keeps exactly the active branch in the model's context.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/failpoint"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/secret"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// Log is the part of the session store the agent writes to.
type Log interface {
	Append(typ, turn string, data any) (session.Event, error)
}

// CompactionStore persists model-context checkpoints.
type CompactionStore interface {
	Append(timeline.Compaction) error
}

// Turn statuses.
const (
	StatusCompleted   = "completed"
	StatusFailed      = "failed"
	StatusCancelled   = "cancelled"
	StatusInterrupted = "interrupted"
)

// Outcome is how a turn ended.
type Outcome struct {
	Status string
	Text   string         // final assistant text
	Err    error          // why it failed (nil when completed or cancelled)
	Usage  provider.Usage // tokens the turn's model steps used, as reported
}

// Config configures an Agent.
type Config struct {
	Log         Log
	Provider    provider.Provider
	Tools       *tools.Set
	System      string
	MaxSteps    int // model steps per turn; 0 = 50
	Compactions CompactionStore
	// CompactAt triggers an automatic compaction before a model step whose
	// estimated context exceeds this many tokens (4 bytes a token); 0 = off.
	CompactAt int
	// Failpoint is called at the agent's named failpoint
	// ("turn.after_tool"); nil means failpoint.Hit (YOLOP_FAILPOINT).
	Failpoint func(name string)
	// SystemFunc, when set, renders System the first time a model call
	// needs it (what it says may cost a git process; a session opened only
	// to list or restore never pays for it).
	SystemFunc func() (string, error)
	// Instructions, when set, reads the project instructions at the start
	// of every turn; they are appended to System for that turn's requests,
	// so an edit (or a rewind that restores an older file) takes effect on
	// the next turn.
	Instructions func() Instructions
}

// Agent is the runtime of one session. It owns the live message store.
type Agent struct {
	cfg Config

	mu sync.Mutex // guards the message store below
	// events are the active branch's events; the model context is derived
	// from them and the installed compaction.
	events     []session.Event
	compaction *timeline.Compaction
	all        []timeline.Compaction
	// total is the usage of every model step of the session, on every
	// branch (what it cost); inContext is the size in tokens of the
	// context at the last reported step of the active branch, and
	// inContextMsgs how many messages that context had (0: unknown).
	total         provider.Usage
	inContext     int
	inContextMsgs int
	// system is the system prompt of the turn in progress (System plus
	// the instructions read at its start); skipped is the last report of
	// instruction files left out, so it is told once, not every turn.
	system  string
	skipped string
	// base is the rendered SystemFunc (baseErr why it failed).
	baseOnce sync.Once
	base     string
	baseErr  error
	// live is the model context of the events after the installed
	// compaction's boundary (all events without one), extended as events
	// are recorded, so a model call does not decode the whole branch. It is
	// built on first use after a reseed or compaction (liveStale): opening
	// a session to list or show it never decodes the context.
	live      messageBuilder
	liveStale bool
	// from is the seq after which events holds the active branch: 0 when
	// it holds all of it, else the installed compaction's boundary (see
	// ReseedFrom); earlier loads the active events up to it, for the
	// transcript. gen counts reseeds, so a load that raced one is dropped.
	from    int64
	earlier func() []session.Event
	gen     int
	// logged caches loggedContextLocked for the events as of gen and n.
	logged struct{ gen, n, tokens int }
}

// systemPrompt returns the system prompt in force.
func (a *Agent) systemPrompt() string {
	base, _ := a.baseSystem()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.system == "" {
		return base
	}
	return a.system
}

// baseSystem is System, rendered by SystemFunc once when that is set.
func (a *Agent) baseSystem() (string, error) {
	if a.cfg.SystemFunc == nil {
		return a.cfg.System, nil
	}
	a.baseOnce.Do(func() { a.base, a.baseErr = a.cfg.SystemFunc() })
	return a.base, a.baseErr
}

// loadInstructions reads the project instructions for a new turn and
// reports skipped files once.
func (a *Agent) loadInstructions(onUpdate func(Update)) {
	if a.cfg.Instructions == nil {
		return
	}
	in := a.cfg.Instructions()
	sys, _ := a.baseSystem()
	if p := in.Prompt(); p != "" {
		sys = strings.TrimRight(sys, "\n") + "\n\n" + p
	}
	skipped := strings.Join(in.Skipped, "; ")
	a.mu.Lock()
	a.system = sys
	changed := skipped != a.skipped
	a.skipped = skipped
	a.mu.Unlock()
	if changed && skipped != "" {
		onUpdate(Update{Kind: UpdateNotice, Text: "some project instructions were left out: " + skipped})
	}
}

// New returns an agent with an empty message store; call Reseed to load the
// active branch.
func New(cfg Config) *Agent {
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 50
	}
	if cfg.Failpoint == nil {
		cfg.Failpoint = failpoint.Hit
	}
	return &Agent{cfg: cfg}
}

// Provider returns the agent's provider.
func (a *Agent) Provider() provider.Provider { return a.cfg.Provider }

// Reseed replaces the live message store with the active branch: its
// events, and the compaction checkpoints known for the session (the latest
// compatible one on the active branch is installed). It runs on resume and
// after every conversation restore; no restart is needed.
func (a *Agent) Reseed(active []session.Event, compactions []timeline.Compaction, isActive func(turn string, seq int64) bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reseedLocked(active, compactions, isActive)
	a.from, a.earlier = 0, nil
}

// ReseedLazy is Reseed for a long branch: the model context needs only
// the events after the boundary of the compaction it installs, so only
// those are loaded now, with after (called during this call, under
// whatever lock the caller holds). The transcript needs the whole branch:
// earlier returns the active events up to the boundary when it is first
// asked for (called without any lock of the agent's, so it may take the
// caller's).
func (a *Agent) ReseedLazy(after func(seq int64) []session.Event, earlier func() []session.Event, compactions []timeline.Compaction, isActive func(turn string, seq int64) bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var from int64
	p := a.cfg.Provider
	if c := timeline.Select(compactions, p.Name(), p.Model(), compactionFormat, isActive); c != nil {
		from = c.SourceSeq
	}
	a.reseedLocked(after(from), compactions, isActive)
	a.from, a.earlier = from, earlier
	if from == 0 {
		a.earlier = nil
	}
}

// allEvents returns the whole active branch, loading the events
// ReseedLazy skipped the first time.
func (a *Agent) allEvents() []session.Event {
	for {
		a.mu.Lock()
		from, earlier, gen := a.from, a.earlier, a.gen
		if from == 0 {
			evs := a.events
			a.mu.Unlock()
			return evs
		}
		a.mu.Unlock()
		// Loaded without the agent's lock: earlier takes the controller's,
		// which holds it while it reseeds the agent.
		loaded := earlier()
		a.mu.Lock()
		if a.gen == gen {
			var head []session.Event
			for _, ev := range loaded {
				if ev.Seq <= from {
					head = append(head, ev)
				}
			}
			a.events = append(head, a.events...)
			a.from, a.earlier = 0, nil
			evs := a.events
			a.mu.Unlock()
			return evs
		}
		// Reseeded meanwhile: load for the new branch.
		a.mu.Unlock()
	}
}

func (a *Agent) reseedLocked(active []session.Event, compactions []timeline.Compaction, isActive func(turn string, seq int64) bool) {
	a.gen++
	a.events = append([]session.Event(nil), active...)
	a.all = append([]timeline.Compaction(nil), compactions...)
	a.compaction = nil
	if isActive != nil {
		p := a.cfg.Provider
		a.compaction = timeline.Select(a.all, p.Name(), p.Model(), compactionFormat, isActive)
	}
	// The context changed: the size reported for the old one no longer
	// applies until the next model step reports again.
	a.inContext, a.inContextMsgs = 0, 0
	a.liveStale = true
}

// liveLocked returns the live context, recomputing it from the installed
// compaction's boundary onward when stale: only the events after it are
// decoded. a.mu must be held.
func (a *Agent) liveLocked() *messageBuilder {
	if a.liveStale {
		a.live = messageBuilder{}
		for _, ev := range a.afterBoundary(a.events) {
			a.live.add(ev)
		}
		a.liveStale = false
	}
	return &a.live
}

// afterBoundary returns the suffix of evs (a prefix of the active events)
// after the installed compaction's source boundary. a.mu must be held.
func (a *Agent) afterBoundary(evs []session.Event) []session.Event {
	c := a.compaction
	if c == nil {
		return evs
	}
	// Events are in seq order: find the first one after the boundary.
	i := sort.Search(len(evs), func(i int) bool { return evs[i].Seq > c.SourceSeq })
	return evs[i:]
}

// AddUsage adds usage reported before this process (the session's event
// log) to the session's total.
func (a *Agent) AddUsage(u provider.Usage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.total = a.total.Add(u)
}

// Usage returns the session's total usage, and the size in tokens of the
// model context at the last reported step (0 when unknown). Before a step
// has run in this process (a new `yolop -p /context`, a resumed TUI), it
// is what the active branch's last recorded step reported.
func (a *Agent) Usage() (total provider.Usage, inContext int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inContext > 0 {
		return a.total, a.inContext
	}
	return a.total, a.loggedContextLocked()
}

// loggedContextLocked is the context size the newest assistant event of
// the active branch recorded (after the compaction boundary), 0 when none
// did. The answer is kept until the events change. a.mu must be held.
func (a *Agent) loggedContextLocked() int {
	if a.logged.gen == a.gen && a.logged.n == len(a.events) {
		return a.logged.tokens
	}
	tokens := 0
	for i := len(a.events) - 1; i >= 0; i-- {
		ev := a.events[i]
		if ev.Type != EventAssistant {
			continue
		}
		var d struct {
			Usage *provider.Usage `json:"usage"`
		}
		if json.Unmarshal(ev.Data, &d) == nil && d.Usage != nil {
			tokens = d.Usage.Prompt() + d.Usage.OutputTokens
		}
		break
	}
	a.logged.gen, a.logged.n, a.logged.tokens = a.gen, len(a.events), tokens
	return tokens
}

// contextTokens is the size of msgs in tokens: the provider's own count of
// the context it last saw plus an estimate of what was added since, or an
// estimate of everything when the provider reported nothing.
func (a *Agent) contextTokens(msgs []provider.Message) int {
	a.mu.Lock()
	known, n := a.inContext, a.inContextMsgs
	a.mu.Unlock()
	if known > 0 && n > 0 && n <= len(msgs) {
		return known + estimate(msgs[n:])
	}
	return estimate(msgs)
}

// Context returns the model input: the installed compaction's replacement,
// then the raw active-branch messages after its boundary.
func (a *Agent) Context() []provider.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.contextLocked()
}

func (a *Agent) contextLocked() []provider.Message {
	return a.withHead(a.liveLocked().messages())
}

// contextOf is the model input made of evs (a prefix of the active events)
// and the installed compaction. a.mu must be held.
func (a *Agent) contextOf(evs []session.Event) []provider.Message {
	return a.withHead(Messages(a.afterBoundary(evs)))
}

// withHead completes msgs, the messages after the installed compaction's
// boundary, into the model input: the compaction's summary first, and
// reasoning artifacts only of this agent's provider. a.mu must be held.
func (a *Agent) withHead(msgs []provider.Message) []provider.Message {
	var head []provider.Message
	if c := a.compaction; c != nil {
		var r replacement
		if json.Unmarshal(c.Replacement, &r) == nil {
			head = []provider.Message{{Role: provider.RoleUser, Text: summaryPrefix + r.Summary}}
		}
	}
	// Reasoning artifacts are only meaningful to the provider that issued
	// them (signatures, opaque blobs); a session that changed providers
	// must not hand one provider's artifacts to another.
	name := a.cfg.Provider.Name()
	for i := range msgs {
		if len(msgs[i].Reasoning) == 0 {
			continue
		}
		var own []provider.Reasoning
		for _, r := range msgs[i].Reasoning {
			if r.Provider == name {
				own = append(own, r)
			}
		}
		msgs[i].Reasoning = own
	}
	if len(head) > 0 && len(msgs) > 0 && msgs[0].Role == provider.RoleUser {
		msgs[0].Text = head[0].Text + "\n\n" + msgs[0].Text
		return msgs
	}
	return append(head, msgs...)
}

// TranscriptParts returns the transcript of the active branch in two
// parts, for a host that shows the newest first: the items of the events
// loaded now (those after the installed compaction's boundary, or all of
// them) and, when those are not the whole branch, a func that loads and
// returns the items before them (nil otherwise). Both parts end and begin
// at a turn boundary, so together they are Transcript.
func (a *Agent) TranscriptParts() ([]Item, func() []Item) {
	a.mu.Lock()
	from, evs := a.from, a.events
	a.mu.Unlock()
	if from == 0 {
		return Items(evs), nil
	}
	return Items(evs), func() []Item {
		all := a.allEvents()
		i := sort.Search(len(all), func(i int) bool { return all[i].Seq > from })
		return Items(all[:i])
	}
}

// Transcript returns the active branch as transcript items.
func (a *Agent) Transcript() []Item {
	evs := a.allEvents()
	return Items(evs)
}

func (a *Agent) record(typ, turn string, data any) (session.Event, error) {
	ev, err := a.cfg.Log.Append(typ, turn, data)
	if err != nil {
		return ev, err
	}
	a.mu.Lock()
	a.events = append(a.events, ev)
	if !a.liveStale {
		a.live.add(ev)
	}
	a.mu.Unlock()
	return ev, nil
}

// Note appends a notice event to the active branch (tagged with turn).
func (a *Agent) Note(turn string, n NoticeData) error {
	_, err := a.record(EventNotice, turn, n)
	return err
}

// RunTurn runs one turn for the checkpoint turnID. Every event is persisted
// before the next step starts; a cancelled ctx ends the turn as cancelled.
func (a *Agent) RunTurn(ctx context.Context, turnID, prompt string, onUpdate func(Update)) Outcome {
	var usage provider.Usage
	out := a.runTurn(ctx, turnID, prompt, onUpdate, &usage)
	out.Usage = usage
	return out
}

func (a *Agent) runTurn(ctx context.Context, turnID, prompt string, onUpdate func(Update), usage *provider.Usage) Outcome {
	if onUpdate == nil {
		onUpdate = func(Update) {}
	}
	a.loadInstructions(onUpdate)
	promptEv, err := a.record(EventUser, turnID, UserData{Text: prompt})
	if err != nil {
		return Outcome{Status: StatusFailed, Err: fmt.Errorf("record prompt: %w", err)}
	}
	fail := func(status string, err error) Outcome {
		// A provider's error can quote a request: no key reaches the
		// log, the hosts or the caller.
		err = secret.Error(err)
		msg := err.Error()
		if status == StatusCancelled {
			msg = "cancelled by the user"
		}
		if _, rerr := a.record(EventTurnError, turnID, TurnErrorData{Status: status, Error: msg}); rerr != nil {
			// The turn ends either way; the journal's turn.completed still
			// records its status, and the user is told the log lacks it.
			err = fmt.Errorf("%w (and recording it in the event log failed: %v)", err, rerr)
			onUpdate(Update{Kind: UpdateError, Text: err.Error()})
			return Outcome{Status: status, Err: err}
		}
		if status == StatusCancelled {
			return Outcome{Status: status}
		}
		onUpdate(Update{Kind: UpdateError, Text: msg})
		return Outcome{Status: status, Err: err}
	}
	if _, err := a.baseSystem(); err != nil {
		return fail(StatusFailed, fmt.Errorf("render the system prompt: %w", err))
	}
	hitTool := false
	for step := 0; step < a.cfg.MaxSteps; step++ {
		if ctx.Err() != nil {
			return fail(StatusCancelled, ctx.Err())
		}
		msgs := a.Context()
		if a.cfg.CompactAt > 0 && a.contextTokens(msgs) > a.cfg.CompactAt {
			// Only what came before this turn is summarized: the model must
			// read the request it is working on, not a summary of it.
			_, err := a.compact(ctx, promptEv.Seq-1)
			if err == nil {
				msgs = a.Context()
			} else if !errors.Is(err, ErrNothingToCompact) && ctx.Err() == nil {
				onUpdate(Update{Kind: UpdateNotice, Text: "automatic compaction failed, continuing with the full context: " + err.Error()})
			}
		}
		req := provider.Request{Model: a.cfg.Provider.Model(), System: a.systemPrompt(), Messages: msgs, Tools: a.specs()}
		resp, err := a.cfg.Provider.Stream(ctx, req, func(d provider.Delta) {
			if d.Text != "" {
				onUpdate(Update{Kind: UpdateText, Text: d.Text})
			}
			if d.Reasoning != "" {
				onUpdate(Update{Kind: UpdateReasoning, Text: d.Reasoning})
			}
		})
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				return fail(StatusCancelled, err)
			}
			if name := a.cfg.Provider.Name(); !strings.HasPrefix(err.Error(), name+":") {
				err = fmt.Errorf("%s: %w", name, err)
			}
			return fail(StatusFailed, err)
		}
		msg := resp.Message
		msg.Role = provider.RoleAssistant
		data := AssistantData{Provider: a.cfg.Provider.Name(), Model: a.cfg.Provider.Model(), Message: msg, StopReason: resp.StopReason}
		if !resp.Usage.IsZero() {
			u := resp.Usage
			data.Usage = &u
			*usage = usage.Add(u)
			a.mu.Lock()
			a.total = a.total.Add(u)
			a.inContext, a.inContextMsgs = u.Prompt()+u.OutputTokens, len(msgs)+1
			a.mu.Unlock()
		}
		if _, err := a.record(EventAssistant, turnID, data); err != nil {
			return Outcome{Status: StatusFailed, Err: fmt.Errorf("record reply: %w", err)}
		}
		if len(msg.ToolCalls) == 0 {
			return Outcome{Status: StatusCompleted, Text: msg.Text}
		}
		// toolErr is an infrastructure failure of a tool (not a problem the
		// model can fix, which is a tool result): the turn fails with it so
		// the user sees it, after every call has a result.
		var toolErr error
		for _, call := range msg.ToolCalls {
			if ctx.Err() != nil || toolErr != nil {
				why := "cancelled before it ran"
				if toolErr != nil {
					why = "not run: an earlier tool call failed"
				}
				if _, err := a.record(EventToolResult, turnID, ToolResultData{CallID: call.ID, Name: call.Name, Content: why, IsError: true}); err != nil {
					return Outcome{Status: StatusFailed, Err: fmt.Errorf("record tool result: %w", err)}
				}
				continue
			}
			info := a.toolInfo(call)
			info.Status = "in_progress"
			onUpdate(Update{Kind: UpdateToolStart, Tool: &info})
			res, err := a.cfg.Tools.Run(ctx, call.Name, call.Arguments)
			if err != nil {
				res = tools.Result{Content: "tool failed: " + err.Error(), IsError: true}
				if ctx.Err() == nil {
					toolErr = fmt.Errorf("tool %s: %w", call.Name, err)
				}
			}
			done := info
			applyDisplay(&done, res.Display)
			done.Result, done.IsError, done.Refused = res.Content, res.IsError, res.Refused
			done.Status = ToolStatus(res.IsError, res.Refused)
			stored := done
			stored.Result = ""
			if _, err := a.record(EventToolResult, turnID, ToolResultData{CallID: call.ID, Name: call.Name, Content: res.Content, IsError: res.IsError, Info: &stored, External: res.External}); err != nil {
				return Outcome{Status: StatusFailed, Err: fmt.Errorf("record tool result: %w", err)}
			}
			onUpdate(Update{Kind: UpdateToolEnd, Tool: &done})
			if !hitTool {
				hitTool = true
				a.cfg.Failpoint("turn.after_tool")
			}
		}
		if toolErr != nil {
			return fail(StatusFailed, toolErr)
		}
	}
	return fail(StatusFailed, fmt.Errorf("the model used %d steps without finishing; ask it to continue", a.cfg.MaxSteps))
}

func (a *Agent) specs() []provider.ToolSpec {
	if a.cfg.Tools == nil {
		return nil
	}
	var out []provider.ToolSpec
	for _, s := range a.cfg.Tools.Specs() {
		out = append(out, provider.ToolSpec{Name: s.Name, Description: s.Description, Parameters: s.Parameters})
	}
	return out
}

func (a *Agent) toolInfo(call provider.ToolCall) ToolInfo {
	info := ToolInfo{ID: call.ID, Name: call.Name, Args: call.Arguments, Kind: tools.KindOther, Title: call.Name}
	if a.cfg.Tools != nil {
		if t, ok := a.cfg.Tools.Lookup(call.Name); ok {
			info.Kind = t.Kind()
		}
	}
	var args map[string]any
	if json.Unmarshal([]byte(call.Arguments), &args) == nil {
		for _, k := range []string{"command", "path", "pattern", "action"} {
			if v, ok := args[k].(string); ok && v != "" {
				info.Title = call.Name + ": " + firstLine(v, 80)
				if k == "path" {
					info.Path = v
				}
				break
			}
		}
	}
	return info
}

func applyDisplay(info *ToolInfo, d *tools.Display) {
	if d == nil {
		return
	}
	if d.Kind != "" {
		info.Kind = d.Kind
	}
	if d.Path != "" {
		info.Path = d.Path
	}
	if d.Title != "" {
		info.Title = d.Title
	}
	info.OldText, info.NewText = d.OldText, d.NewText
}

func firstLine(s string, max int) string {
	for i, r := range s {
		if r == '\n' {
			s = s[:i] + " …"
			break
		}
	}
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// estimate approximates the token count of msgs (4 bytes a token).
func estimate(msgs []provider.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Text)
		for _, c := range m.ToolCalls {
			n += len(c.Arguments)
		}
		for _, r := range m.Reasoning {
			n += len(r.Text) + len(r.Redacted)
		}
	}
	return n / 4
}

// NoteStopped tells the model, at its next turn, which of the background
// tasks among ws were stopped when the process that started them exited
// (notices after turn).
func (a *Agent) NoteStopped(turn string, ws []tools.Writer) error {
	var err error
	for _, w := range ws {
		if w.Kind != tools.WriterBackground {
			continue
		}
		err = errors.Join(err, a.Note(turn, NoticeData{Kind: "task_stopped", Model: true,
			Text: fmt.Sprintf("Background task %s (%s) was stopped when the yolop process that started it exited; it is not running any more.", w.ID, w.Command)}))
	}
	if err != nil {
		return fmt.Errorf("record that background tasks were stopped: %w", err)
	}
	return nil
}

// UsageReport says, for /context, how full the model context was at the
// last model step (window is the model's context window, 0 when unknown)
// and the tokens the session used.
func (a *Agent) UsageReport(window int) string {
	var b strings.Builder
	total, in := a.Usage()
	switch {
	case in > 0 && window > 0:
		fmt.Fprintf(&b, "Context: %d of %d tokens (%d%%) at the last model step\n", in, window, in*100/window)
	case in > 0:
		fmt.Fprintf(&b, "Context: %d tokens at the last model step (the model's window is unknown: set context_window in the provider's settings)\n", in)
	default:
		b.WriteString("Context: not measured yet (the provider reports it with the next model step)\n")
	}
	fmt.Fprintf(&b, "Tokens used in this session: %d input, %d output, %d cache read, %d cache write\n", total.InputTokens, total.OutputTokens, total.CacheReadTokens, total.CacheWriteTokens)
	return b.String()
}
