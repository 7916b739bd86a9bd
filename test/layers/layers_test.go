// Package layers holds the test of the import graph that
// docs/architecture.md draws: every import of a yolop package points to a
// package of a lower level, and the libraries that belong to one host or
// the command line stay there.
package layers

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/yolop-dev/yolop/"

// levels places every package of the module (a prefix ending in "/..."
// covers a directory and everything under it). An import must point to a
// strictly lower level. A new package gets its level here, where what it
// imports and what imports it puts it; a package that no longer fits its
// level is a layering change for docs/architecture.md first.
var levels = map[string]int{
	"cmd/yolop":            15,
	"internal/cli":         14,
	"internal/cli/root":    13,
	"internal/cli/...":     12, // a folder per noun
	"internal/cli/cmdutil": 11,
	"internal/cli/clitest": 0,
	"internal/host/...":    10,
	"internal/app":         9,

	"internal/catalog": 7,
	"internal/command": 7,

	"internal/gitstate":      6,
	"internal/checkpoint":    5,
	"internal/agent/system":  5,
	"internal/setup":         5,
	"internal/resume":        5,
	"internal/config":        5,
	"internal/agent":         4,
	"internal/land":          4,
	"internal/mcp":           4,
	"internal/search":        4,
	"internal/worktree":      4,
	"internal/provider/all":  4,
	"internal/timeline":      3,
	"internal/session":       3,
	"internal/snapshot":      3,
	"internal/agent/tools":   3,
	"internal/provider/...":  3,
	"internal/provider":      2,
	"internal/git":           2,
	"internal/session/jsonl": 2,
	"internal/sandbox":       2,

	"internal/binenc":    1,
	"internal/blocklist": 1,
	"internal/buildinfo": 1,
	"internal/failpoint": 1,
	"internal/fault":     1,
	"internal/fsutil":    1,
	"internal/secret":    1,
	"internal/spawn":     1,

	// Test support: imported by tests only, never by a product package.
	"internal/git/gittest": 0,
	"internal/app/apptest": 0,
	"internal/testenv/...": 0,
	"internal/testenv":     0,
	"test/...":             -1,
}

// owned lists the libraries only one part of yolop may import (and its
// own tests): their interfaces change between versions.
var owned = map[string]string{
	"github.com/coder/acp-go-sdk":        "internal/host/acp",
	"charm.land/bubbletea/v2":            "internal/host/tui",
	"github.com/charmbracelet/bubbletea": "internal/host/tui",
	"github.com/spf13/cobra":             "internal/cli",
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; run the test from its directory", len(pkgs))
	}
	return pkgs
}

// level finds a package's level: its own entry, else the longest "/..."
// entry above it.
func level(path string) (int, bool) {
	rel := strings.TrimPrefix(path, module)
	if l, ok := levels[rel]; ok {
		return l, true
	}
	best, found := "", false
	var l int
	for k, v := range levels {
		dir, ok := strings.CutSuffix(k, "/...")
		if ok && (rel == dir || strings.HasPrefix(rel, dir+"/")) && len(dir) > len(best) {
			best, l, found = dir, v, true
		}
	}
	return l, found
}

func TestImportsPointDown(t *testing.T) {
	t.Parallel()
	var problems []string
	for _, p := range listPackages(t) {
		from, ok := level(p.ImportPath)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s has no level in this test's table: give it the level of what it is (docs/architecture.md)", p.ImportPath))
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to, ok := level(imp)
			if !ok {
				continue // reported as a package of its own
			}
			if from <= 0 {
				continue // test support may use anything
			}
			if to <= 0 || to >= from {
				problems = append(problems, fmt.Sprintf("%s (level %d) imports %s (level %d)", strings.TrimPrefix(p.ImportPath, module), from, strings.TrimPrefix(imp, module), to))
			}
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

func TestOwnedLibrariesStayHome(t *testing.T) {
	t.Parallel()
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module)
		for _, imp := range p.Imports {
			for lib, home := range owned {
				if (imp == lib || strings.HasPrefix(imp, lib+"/")) && rel != home && !strings.HasPrefix(rel, home+"/") {
					t.Errorf("%s imports %s, which only %s may use", rel, imp, home)
				}
			}
		}
	}
}
