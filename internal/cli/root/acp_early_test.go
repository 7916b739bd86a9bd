package root

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/buildinfo"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/host/acp"
	"github.com/yolop-dev/yolop/internal/provider"
)

// rpc is a minimal ACP client over pipes to acp.Serve with the real
// opener.
type rpc struct {
	t    *testing.T
	in   *io.PipeWriter
	msgs chan map[string]json.RawMessage
	id   int
	done chan struct{}
}

func dialACP(t *testing.T, env app.Env) *rpc {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &rpc{t: t, in: inW, msgs: make(chan map[string]json.RawMessage, 256), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		_ = acp.Serve(context.Background(), inR, outW, acpOpener{env: env, new: app.New{Start: app.Early}, open: app.Open}, io.Discard)
		outW.Close()
	}()
	go func() {
		defer close(c.msgs)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				c.msgs <- m
			}
		}
	}()
	return c
}

// call sends a request and waits for its response's result.
func (c *rpc) call(method string, params any) json.RawMessage {
	c.t.Helper()
	c.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	want := fmt.Sprint(c.id)
	deadline := time.After(60 * time.Second)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				c.t.Fatalf("%s: the agent closed the connection", method)
			}
			if string(m["id"]) != want || m["method"] != nil {
				continue
			}
			if e := m["error"]; e != nil {
				c.t.Fatalf("%s: %s", method, e)
			}
			return m["result"]
		case <-deadline:
			c.t.Fatalf("%s: no response", method)
		}
	}
}

// hangUp disconnects and waits until the agent has closed its sessions.
func (c *rpc) hangUp() {
	c.in.Close()
	for range c.msgs {
	}
	<-c.done
}

// TestACPBranchFromFirstPrompt: an ACP session/new prepares the worktree
// but makes no session and no branch; a session closed unused appears in
// no list, is never the one -c continues, and gives its worktree back as
// the spare; the first prompt makes the session and names its branch
// after the prompt, on the recycled worktree.
func TestACPBranchFromFirstPrompt(t *testing.T) {
	repo := gittest.NewRepo(t)
	data := t.TempDir()
	o := app.Env{DataDir: data, Provider: provider.Config{Provider: provider.NameSim}, Spares: config.Spares{Limit: 1}}
	c := dialACP(t, o)
	c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})

	var created struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(c.call("session/new", map[string]any{"cwd": repo, "mcpServers": []any{}}), &created); err != nil || created.SessionID == "" {
		t.Fatalf("session/new: %v %+v", err, created)
	}
	c.call("session/close", map[string]any{"sessionId": created.SessionID})
	if rows, err := catalog.ListSessions(data); err != nil || len(rows) != 0 {
		t.Fatalf("a session opened and closed unused is listed: %+v %v", rows, err)
	}
	if out := gittest.Git(t, repo, "for-each-ref", "refs/heads/yolop/"); out != "" {
		t.Fatalf("an unused session made a branch: %s", out)
	}
	spares, _ := filepath.Glob(filepath.Join(data, "worktrees", "*", ".spare-1"))
	if len(spares) != 1 {
		t.Fatalf("the unused session's worktree was not given back as a spare: %v", spares)
	}
	if _, err := app.Open(context.Background(), app.Env{DataDir: data, Dir: repo, Provider: o.Provider}, app.Continue{}); err == nil {
		t.Fatal("-c found a session although none was used")
	}

	if err := json.Unmarshal(c.call("session/new", map[string]any{"cwd": repo, "mcpServers": []any{}}), &created); err != nil {
		t.Fatal(err)
	}
	if out := gittest.Git(t, repo, "for-each-ref", "refs/heads/yolop/"); out != "" {
		t.Fatalf("session/new made a branch before any prompt: %s", out)
	}
	c.call("session/prompt", map[string]any{"sessionId": created.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "fix the parser"}}})
	rows, err := catalog.ListSessions(data)
	if err != nil || len(rows) != 1 || rows[0].SessionID != created.SessionID {
		t.Fatalf("after its first prompt: listed %+v %v", rows, err)
	}
	branch := gittest.Git(t, repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/yolop/")
	if !strings.HasPrefix(branch, "yolop/fix-the-parser-") || strings.Contains(branch, "\n") {
		t.Fatalf("branch %q, want one named after the first prompt", branch)
	}
	c.hangUp()
	s, err := app.Open(context.Background(), app.Env{DataDir: data, Provider: o.Provider}, app.Resume{ID: created.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	in := s.Info()
	s.Close()
	if !in.Recycled || in.Branch != branch {
		t.Fatalf("session info: recycled %v, branch %q (want the spare, %q)", in.Recycled, in.Branch, branch)
	}
}

// TestACPVersionIsYolopVersion: initialize names the version `yolop
// version` prints, not Go's "(devel)".
func TestACPVersionIsYolopVersion(t *testing.T) {
	c := dialACP(t, app.Env{DataDir: t.TempDir(), Provider: provider.Config{Provider: provider.NameSim}})
	var res struct {
		AgentInfo struct {
			Version string `json:"version"`
		} `json:"agentInfo"`
	}
	if err := json.Unmarshal(c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}), &res); err != nil {
		t.Fatal(err)
	}
	if res.AgentInfo.Version != buildinfo.Version() || res.AgentInfo.Version == "(devel)" || res.AgentInfo.Version == "" {
		t.Fatalf("initialize says version %q, yolop version says %q", res.AgentInfo.Version, buildinfo.Version())
	}
}

// TestACPFolderOutsideGit: session/new with a cwd outside git works, and
// its first prompt makes an in-place session of the folder with file
// checkpoints: a deleted file comes back with a workspace rewind, and the
// folder gets no .git.
func TestACPFolderOutsideGit(t *testing.T) {
	folder, data := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(folder, "keep.txt"), []byte("important\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := app.Env{DataDir: data, Provider: provider.Config{Provider: provider.NameSim}}
	c := dialACP(t, o)
	c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	var created struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(c.call("session/new", map[string]any{"cwd": folder, "mcpServers": []any{}}), &created); err != nil || created.SessionID == "" {
		t.Fatalf("session/new: %v %+v", err, created)
	}
	c.call("session/prompt", map[string]any{"sessionId": created.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "rm keep.txt"}}})
	if _, err := os.Lstat(filepath.Join(folder, "keep.txt")); err == nil {
		t.Fatal("the turn did not delete keep.txt")
	}
	c.hangUp()
	s, err := app.Open(context.Background(), app.Env{DataDir: data, Provider: o.Provider}, app.Resume{ID: created.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if in := s.Info(); in.WorkspaceMode != config.WorkspaceInPlace || !in.Workspace {
		t.Fatalf("session info: mode %q, workspace %v; want in place with snapshots", in.WorkspaceMode, in.Workspace)
	}
	exec := func(line string) (command.Result, error) {
		cmd, err := command.Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		return s.Exec(context.Background(), cmd)
	}
	res, err := exec("/rewind cp1 workspace")
	if err != nil || res.Preview == nil {
		t.Fatalf("preview: %v %+v", err, res)
	}
	if _, err := exec("/rewind cp1 workspace --confirm " + res.Preview.Token); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(folder, "keep.txt")); err != nil || string(b) != "important\n" {
		t.Fatalf("keep.txt after the rewind: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(folder, ".git")); !os.IsNotExist(err) {
		t.Fatalf("the folder got a .git: %v", err)
	}
}
