package acp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/mcp"
)

// fakeOpener keeps sessions in memory across connections, as the real one
// keeps them on disk, so a second Serve can session/load what the first
// created.
type fakeOpener struct {
	root string

	mu       sync.Mutex
	n        int
	sessions map[string]*fakeSession
	locked   map[string]bool // held by "another process"
}

func newFakeOpener(root string) *fakeOpener {
	return &fakeOpener{root: root, sessions: map[string]*fakeSession{}, locked: map[string]bool{}}
}

func (o *fakeOpener) New(_ context.Context, cwd string, _ []mcp.Server) (Session, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n++
	s := &fakeSession{id: fmt.Sprintf("s_%03d", o.n), root: o.root + "/worktree", cwd: cwd, started: make(chan string, 8)}
	o.sessions[s.id] = s
	return s, nil
}

func (o *fakeOpener) Load(_ context.Context, id, _ string, _ []mcp.Server) (Session, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.locked[id] {
		return nil, fmt.Errorf("session %s is locked by another yolop process (pid 4242); close it there first", id)
	}
	s := o.sessions[id]
	if s == nil {
		return nil, fmt.Errorf("no session %s in the data directory", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open {
		return nil, fmt.Errorf("session %s is locked by this process", id)
	}
	s.open = true
	return s, nil
}

func (o *fakeOpener) session(id string) *fakeSession {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.sessions[id]
}

type fakeTurn struct {
	id     string
	prompt string
	first  int // index of the turn's first transcript item
}

// fakeSession runs a tiny prompt language (a subset of the sim provider's)
// and a real two-step restore with tokens, so the host's paths are
// exercised against plausible behaviour.
type fakeSession struct {
	id, root, cwd string
	started       chan string // receives the prompt when a turn starts

	mu        sync.Mutex
	open      bool
	closes    int
	items     []agent.Item
	turns     []fakeTurn
	next      int // next checkpoint number
	tokens    int
	token     string // outstanding confirmation token
	tokenFor  string // the command it confirms (without the flag)
	cancelled bool   // the last turn saw its context cancelled
	repairs   []string
}

func (s *fakeSession) ID() string { return s.id }

func (s *fakeSession) Info() app.Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return app.Info{SessionID: s.id, ActiveRoot: s.root, Workspace: true, Checkpoints: len(s.turns), Repairs: s.repairs}
}

func (s *fakeSession) Transcript() []agent.Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]agent.Item(nil), s.items...)
}

func (s *fakeSession) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open = false
	s.closes++
	return nil
}

func (s *fakeSession) closeCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closes
}

func (s *fakeSession) Prompt(ctx context.Context, text string, on func(agent.Update)) (app.TurnResult, error) {
	s.mu.Lock()
	s.next++
	cp := fmt.Sprintf("cp%d", s.next)
	s.turns = append(s.turns, fakeTurn{id: cp, prompt: text, first: len(s.items)})
	s.token = "" // a new turn invalidates outstanding previews
	s.mu.Unlock()
	s.record(agent.Item{Kind: agent.ItemUser, Turn: cp, Text: text})
	s.started <- text

	res := app.TurnResult{CheckpointID: cp, Status: "completed"}
	actions := 0
	var echo []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, "think "):
			t := strings.TrimPrefix(line, "think ")
			on(agent.Update{Kind: agent.UpdateReasoning, Text: t})
			s.record(agent.Item{Kind: agent.ItemReasoning, Turn: cp, Text: t})
		case strings.HasPrefix(line, "write "):
			path := strings.TrimPrefix(line, "write ")
			var body strings.Builder
			for i++; i < len(lines) && lines[i] != "EOF"; i++ {
				body.WriteString(lines[i] + "\n")
			}
			content := body.String()
			actions++
			ti := &agent.ToolInfo{ID: fmt.Sprintf("call_%s_%d", cp, actions), Name: "write_file", Kind: "edit",
				Title: "write " + path, Args: fmt.Sprintf(`{"path":%q}`, path), Status: "in_progress", Path: path, NewText: &content}
			on(agent.Update{Kind: agent.UpdateToolStart, Tool: ti})
			done := *ti
			done.Status, done.Result = "completed", "wrote "+path
			on(agent.Update{Kind: agent.UpdateToolEnd, Tool: &done})
			s.record(agent.Item{Kind: agent.ItemTool, Turn: cp, Tool: &done})
		case strings.HasPrefix(line, "$ "):
			actions++
			cmd := strings.TrimPrefix(line, "$ ")
			ti := &agent.ToolInfo{ID: fmt.Sprintf("call_%s_%d", cp, actions), Name: "bash", Kind: "execute",
				Title: "bash: " + cmd, Args: fmt.Sprintf(`{"command":%q}`, cmd), Status: "in_progress"}
			on(agent.Update{Kind: agent.UpdateToolStart, Tool: ti})
			done := *ti
			done.Status, done.Result, done.IsError = "failed", "exit status 127", true
			on(agent.Update{Kind: agent.UpdateToolEnd, Tool: &done})
			s.record(agent.Item{Kind: agent.ItemTool, Turn: cp, Tool: &done})
		case strings.HasPrefix(line, "setup "):
			// What app sends for the worktree's setup command before
			// a new session's first turn.
			cmd := strings.TrimPrefix(line, "setup ")
			ti := agent.ToolInfo{ID: "setup", Name: "setup", Kind: "execute", Title: "setup: " + cmd, Args: fmt.Sprintf(`{"command":%q}`, cmd), Status: "in_progress"}
			start, chunk, end := ti, ti, ti
			on(agent.Update{Kind: agent.UpdateSetup, Tool: &start})
			chunk.Result = "installing\n"
			on(agent.Update{Kind: agent.UpdateSetup, Text: "installing\n", Tool: &chunk})
			end.Status, end.Result, end.IsError = "failed", "installing\nregistry unreachable\n", true
			on(agent.Update{Kind: agent.UpdateSetup, Tool: &end})
		case line == "sleep":
			<-ctx.Done()
			s.mu.Lock()
			s.cancelled = true
			s.mu.Unlock()
			res.Status = "cancelled"
			return res, nil
		case line == "fail":
			on(agent.Update{Kind: agent.UpdateError, Text: "provider said no"})
			s.record(agent.Item{Kind: agent.ItemError, Turn: cp, Text: "provider said no"})
			res.Status, res.Error = "failed", "provider said no"
			return res, nil
		case line == "fail quietly":
			res.Status, res.Error = "failed", "connection reset"
			return res, nil
		case line == "undo":
			actions++
			p, err := s.preview(command.Command{Name: "undo"})
			if err != nil {
				return res, err
			}
			res.Pending = p
		default:
			echo = append(echo, line)
		}
	}
	reply := "done: " + checkpoint.Plural(actions, "action", "actions")
	if len(echo) > 0 {
		reply += "\n" + strings.Join(echo, "\n")
	}
	on(agent.Update{Kind: agent.UpdateText, Text: reply})
	s.record(agent.Item{Kind: agent.ItemAssistant, Turn: cp, Text: reply})
	res.Text = reply
	return res, nil
}

func (s *fakeSession) record(it agent.Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = append(s.items, it)
}

func (s *fakeSession) Exec(_ context.Context, cmd command.Command) (command.Result, error) {
	switch cmd.Name {
	case "rewind", "undo", "redo":
	case "compact":
		return command.Result{Kind: command.ResultCompacted, Text: "Compacted 3 turns."}, nil
	default:
		return command.Result{}, fmt.Errorf("fake: /%s not implemented", cmd.Name)
	}
	if cmd.Name == "rewind" && cmd.Target == "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		var rows []checkpoint.Row
		for i := len(s.turns) - 1; i >= 0; i-- {
			rows = append(rows, checkpoint.Row{ID: s.turns[i].id, Prompt: s.turns[i].prompt, Status: "completed",
				CreatedAt: time.Date(2026, 1, 2, 10, i, 0, 0, time.UTC), FilesChanged: 1, Workspace: true})
		}
		return command.Result{Kind: command.ResultList, Rows: rows}, nil
	}
	if !cmd.Confirm {
		p, err := s.preview(cmd)
		if err != nil {
			return command.Result{}, err
		}
		return command.Result{Kind: command.ResultPreview, Preview: p}, nil
	}
	return s.confirm(cmd)
}

// target finds the turn a restore goes back to.
func (s *fakeSession) target(cmd command.Command) (int, error) {
	if cmd.Name == "redo" {
		return 0, &checkpoint.Error{Code: checkpoint.CodeNothingToRedo, Msg: "nothing to redo: no restore has abandoned a branch"}
	}
	if cmd.Name == "undo" {
		if len(s.turns) == 0 {
			return 0, &checkpoint.Error{Code: checkpoint.CodeNothingToUndo, Msg: "nothing to undo: no turn has finished yet"}
		}
		return len(s.turns) - 1, nil
	}
	for i, t := range s.turns {
		if t.id == cmd.Target {
			return i, nil
		}
	}
	return 0, &checkpoint.Error{Code: checkpoint.CodeUnknownCheckpt, Msg: fmt.Sprintf("no checkpoint %s on the active branch; run /rewind to list them", cmd.Target)}
}

func (s *fakeSession) preview(cmd command.Command) (*checkpoint.Preview, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, err := s.target(cmd)
	if err != nil {
		return nil, err
	}
	mode := cmd.Mode
	if mode == "" {
		mode = checkpoint.ModeBoth
	}
	p := &checkpoint.Preview{Action: checkpoint.Action(cmd.Name), Target: s.turns[i].id, Mode: mode,
		Paths:    []checkpoint.PathChange{{Path: "a.txt", Change: "deleted"}},
		Warnings: []checkpoint.Warning{{Kind: "changed_outside_turns", Path: "notes.md"}},
		Recovery: fmt.Sprintf("r%d", s.tokens+1)}
	for _, t := range s.turns[i:] {
		p.TurnsLeaving = append(p.TurnsLeaving, checkpoint.TurnRef{ID: t.id, Prompt: t.prompt})
	}
	s.tokens++
	s.token = fmt.Sprintf("tok%d", s.tokens)
	s.tokenFor = cmd.Name
	p.Token = s.token
	if cmd.Name == "rewind" {
		s.tokenFor = fmt.Sprintf("rewind %s %s", p.Target, mode)
		p.Command = fmt.Sprintf("/rewind %s %s --confirm %s", p.Target, mode, s.token)
	} else {
		p.Command = fmt.Sprintf("/%s --confirm %s", cmd.Name, s.token)
	}
	return p, nil
}

func (s *fakeSession) confirm(cmd command.Command) (command.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == "" || cmd.Token != s.token {
		return command.Result{}, &checkpoint.Error{Code: checkpoint.CodeUnknownToken, Msg: fmt.Sprintf("unknown confirmation token %q: run the preview again", cmd.Token)}
	}
	mode := cmd.Mode
	if mode == "" {
		mode = checkpoint.ModeBoth
	}
	what := cmd.Name
	if cmd.Name == "rewind" {
		what = fmt.Sprintf("rewind %s %s", cmd.Target, mode)
	}
	if what != s.tokenFor {
		return command.Result{}, &checkpoint.Error{Code: checkpoint.CodeTokenMismatch, Msg: "that token confirms a different restore"}
	}
	i, err := s.target(cmd)
	if err != nil {
		return command.Result{}, err
	}
	t := s.turns[i]
	s.token = ""
	if mode.HasConversation() {
		s.items = s.items[:t.first]
		s.turns = s.turns[:i]
	}
	return command.Result{Kind: command.ResultRestored, Restored: &checkpoint.Restored{Action: checkpoint.Action(cmd.Name),
		Target: t.id, Mode: mode, PathsChanged: 1, Prompt: t.prompt, Notice: fmt.Sprintf("Restored %s; recovery checkpoint r%d holds the previous state.", t.id, s.tokens)}}, nil
}
