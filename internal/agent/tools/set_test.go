package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSetRunBadCalls(t *testing.T) {
	t.Parallel()
	s, root := newSet(t)
	putFile(t, root, "a.txt", "hello\n")
	tests := []struct {
		name, tool, args string
		want             []string
	}{
		{"unknown tool", "rm_rf", `{}`, []string{`unknown tool "rm_rf"`, "read_file", "write_file"}},
		{"malformed json", "read_file", `{"path": "a.txt"`, []string{"not valid JSON", "read_file"}},
		{"not an object", "read_file", `["a.txt"]`, []string{"must be a JSON object"}},
		{"string instead of object", "read_file", `"a.txt"`, []string{"must be a JSON object"}},
		{"unknown field", "read_file", `{"path":"a.txt","file":"b"}`, []string{"invalid arguments for read_file", `unknown field "file"`}},
		{"wrong type", "read_file", `{"path":"a.txt","offset":"3"}`, []string{"invalid arguments for read_file", "offset"}},
		{"missing required", "write_file", `{"path":"b.txt"}`, []string{"needs content"}},
		{"empty args to tool needing path", "read_file", ``, []string{"path is empty"}},
		{"trailing garbage", "grep", `{"pattern":"x"} {}`, []string{"not valid JSON"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := s.Run(context.Background(), tc.tool, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			mustErr(t, r, tc.want...)
		})
	}
}

func TestSpecsAreValidSchemas(t *testing.T) {
	t.Parallel()
	s, _ := newSet(t)
	// The argument names are a contract with docs/architecture.md.
	want := map[string][]string{
		"read_file":      {"path", "offset", "limit"},
		"write_file":     {"path", "content"},
		"edit_file":      {"path", "old_text", "new_text", "replace_all"},
		"list_directory": {"path"},
		"grep":           {"pattern", "path", "glob"},
		"delete_file":    {"path"},
		"bash":           {"command", "timeout_ms", "background"},
		"tasks":          {"action", "id"},
		"checkpoint":     {"action", "target", "mode"},
	}
	specs := s.Specs()
	if len(specs) != len(want) {
		t.Fatalf("got %d specs, want %d", len(specs), len(want))
	}
	for _, sp := range specs {
		props, ok := want[sp.Name]
		if !ok {
			t.Errorf("unexpected tool %s", sp.Name)
			continue
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(sp.Parameters, &schema); err != nil {
			t.Errorf("%s: schema: %v", sp.Name, err)
			continue
		}
		var got []string
		for k := range schema.Properties {
			got = append(got, k)
		}
		slices.Sort(got)
		wantSorted := slices.Sorted(slices.Values(props))
		if schema.Type != "object" || !slices.Equal(got, wantSorted) {
			t.Errorf("%s: properties %v, want %v", sp.Name, got, wantSorted)
		}
		for _, r := range schema.Required {
			if !slices.Contains(props, r) {
				t.Errorf("%s: required %q is not a property", sp.Name, r)
			}
		}
		if strings.TrimSpace(sp.Description) == "" {
			t.Errorf("%s: empty description", sp.Name)
		}
		tool, ok := s.Lookup(sp.Name)
		if !ok || tool.Spec().Name != sp.Name {
			t.Errorf("Lookup(%s) failed", sp.Name)
		}
		if k := tool.Kind(); !slices.Contains([]string{KindRead, KindEdit, KindDelete, KindSearch, KindExecute, KindThink, KindOther}, k) {
			t.Errorf("%s: kind %q", sp.Name, k)
		}
	}
	if _, ok := s.Lookup("nope"); ok {
		t.Error("Lookup found an unknown tool")
	}
}

func TestNewValidatesEnv(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  Env
		want string
	}{
		{"empty root", Env{SpillDir: base}, "root is empty"},
		{"missing root", Env{Root: filepath.Join(base, "nope"), SpillDir: base + "/s"}, "resolve root"},
		{"root is a file", Env{Root: file, SpillDir: base + "/s"}, "not a directory"},
		{"no spill dir", Env{Root: root}, "spill directory is empty"},
		{"spill inside root", Env{Root: root, SpillDir: filepath.Join(root, ".spill")}, "inside the root"},
		{"spill inside root via link", Env{Root: root, SpillDir: filepath.Join(link, "spill")}, "inside the root"},
		{"ok through a symlinked root", Env{Root: link, SpillDir: base + "/s"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := New(tc.env)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if s.Root() != root {
					t.Fatalf("root %s, want resolved %s", s.Root(), root)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

type fakeCheckpoints struct {
	got  []CheckpointRequest
	list string
	err  error
}

func (f *fakeCheckpoints) ListForModel(context.Context) (string, error) { return f.list, f.err }

func (f *fakeCheckpoints) BranchesForModel(context.Context) (string, error) { return f.list, f.err }
func (f *fakeCheckpoints) QueuePreview(_ context.Context, req CheckpointRequest) (string, error) {
	f.got = append(f.got, req)
	if f.err != nil {
		return "", f.err
	}
	return "preview queued for " + req.Action, nil
}

func TestCheckpointTool(t *testing.T) {
	t.Parallel()
	t.Run("unavailable", func(t *testing.T) {
		t.Parallel()
		s, _ := newSet(t)
		mustErr(t, call(t, s, "checkpoint", map[string]any{"action": "undo"}), "not available")
	})
	t.Run("description says the user confirms", func(t *testing.T) {
		t.Parallel()
		s, _ := newSet(t)
		tool, _ := s.Lookup("checkpoint")
		d := tool.Spec().Description
		if !strings.Contains(d, "confirm") || !strings.Contains(d, "After this turn ends") {
			t.Fatalf("description does not say the user confirms after the turn: %s", d)
		}
	})
	fake := &fakeCheckpoints{list: "cp2 ...\ncp1 ..."}
	s, _ := newSet(t, func(e *Env) { e.Checkpoints = fake })
	if r := mustOK(t, call(t, s, "checkpoint", map[string]any{"action": "list"})); r.Content != fake.list {
		t.Fatalf("list: %q", r.Content)
	}
	mustOK(t, call(t, s, "checkpoint", map[string]any{"action": "rewind", "target": "cp1", "mode": "workspace"}))
	mustOK(t, call(t, s, "checkpoint", map[string]any{"action": "undo"}))
	mustOK(t, call(t, s, "checkpoint", map[string]any{"action": "redo", "mode": "both"}))
	want := []CheckpointRequest{{"rewind", "cp1", "workspace"}, {"undo", "", ""}, {"redo", "", "both"}}
	if !slices.Equal(fake.got, want) {
		t.Fatalf("requests %+v, want %+v", fake.got, want)
	}
	bad := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"action": "confirm"}, "unknown action"},
		{map[string]any{"action": "rewind"}, "needs a target"},
		{map[string]any{"action": "undo", "target": "cp1"}, "only applies to rewind"},
		{map[string]any{"action": "rewind", "target": "cp1", "mode": "files"}, "unknown mode"},
		{map[string]any{"action": "list", "mode": "both"}, "mode only applies"},
	}
	for _, b := range bad {
		mustErr(t, call(t, s, "checkpoint", b.args), b.want)
	}
	if len(fake.got) != len(want) {
		t.Fatalf("invalid requests reached the controller: %+v", fake.got)
	}
	fake.err = errors.New("nothing to undo: no finished turn")
	mustErr(t, call(t, s, "checkpoint", map[string]any{"action": "undo"}), "nothing to undo")
}
