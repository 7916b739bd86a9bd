package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadInstructions(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	user := filepath.Join(t.TempDir(), "AGENTS.md")
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(user, "user rule\n")
	write(filepath.Join(top, "AGENTS.md"), "top rule\n")
	write(filepath.Join(top, "a", "b", "AGENTS.md"), "nested rule\n")
	write(filepath.Join(top, "a", "b", "c", "AGENTS.md"), strings.Repeat("é", MaxInstructionFile)) // over the cap, multi-byte
	write(filepath.Join(top, "other", "AGENTS.md"), "not on the path\n")
	in := LoadInstructions(top, filepath.Join(top, "a", "b", "c"), user)
	var rels []string
	for _, f := range in.Files {
		rels = append(rels, f.Rel)
	}
	if got := strings.Join(rels, ","); got != user+",AGENTS.md,a/b/AGENTS.md,a/b/c/AGENTS.md" {
		t.Fatalf("files %s", got)
	}
	last := in.Files[3]
	if !last.Truncated || len(last.Content) > MaxInstructionFile || !strings.HasSuffix(last.Content, "é") {
		t.Fatalf("the big file was not cut on a character boundary: truncated=%v len=%d", last.Truncated, len(last.Content))
	}
	p := in.Prompt()
	for _, want := range []string{"user rule", "top rule", "nested rule", "[cut here"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if strings.Contains(p, "not on the path") {
		t.Error("a file off the path to the working directory was loaded")
	}
	if r := in.Report(); !strings.Contains(r, "a/b/c/AGENTS.md") || !strings.Contains(r, "cut to") {
		t.Errorf("report:\n%s", r)
	}

	// The total cap holds across files.
	for i := range 5 {
		write(filepath.Join(top, strings.Repeat("d/", i+1), "AGENTS.md"), strings.Repeat("x", MaxInstructionFile))
	}
	in = LoadInstructions(top, filepath.Join(top, "d", "d", "d", "d", "d"), "")
	total := 0
	for _, f := range in.Files {
		total += f.Used
	}
	if total > MaxInstructionTotal || len(in.Skipped) == 0 {
		t.Fatalf("total %d bytes (cap %d), skipped %v", total, MaxInstructionTotal, in.Skipped)
	}
}

// The /context listing is two aligned columns: paths left, sizes right,
// whatever the lengths of the paths (counted in characters) and sizes.
func TestInstructionsReportAligned(t *testing.T) {
	t.Parallel()
	in := Instructions{Files: []Instruction{
		{Rel: "/home/ü/.config/yolop/AGENTS.md", Size: 7},
		{Rel: "AGENTS.md", Size: 12345},
		{Rel: "a/b/AGENTS.md", Size: 300, Used: 200, Truncated: true},
	}}
	want := "Project instructions, read before every turn:\n" +
		"  /home/ü/.config/yolop/AGENTS.md      7 bytes\n" +
		"  AGENTS.md                        12345 bytes\n" +
		"  a/b/AGENTS.md                      300 bytes (cut to 200 bytes by the size cap)\n"
	if got := in.Report(); got != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
}
