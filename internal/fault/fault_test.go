package fault_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/fault"
)

func TestOf(t *testing.T) {
	t.Parallel()
	errA := fault.New(fault.Conflict, "land: conflicts")
	errB := fault.New(fault.Locked, "session: locked")
	cases := []struct {
		err  error
		want fault.Code
	}{
		{nil, ""},
		{errors.New("plain"), fault.Error},
		{errA, fault.Conflict},
		{fmt.Errorf("apply: %w", errA), fault.Conflict},
		{fmt.Errorf("%w and %w", errB, errA), fault.Locked},
		{fault.With(fault.Usage, fmt.Errorf("bad: %w", errA)), fault.Usage},
		{fmt.Errorf("open: %w", fault.With(fault.NoSession, errors.New("none"))), fault.NoSession},
	}
	for _, c := range cases {
		if got := fault.Of(c.err); got != c.want {
			t.Errorf("Of(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", errA), errA) || errors.Is(errA, fault.New(fault.Conflict, "land: conflicts")) {
		t.Error("a sentinel is matched by identity")
	}
	w := fault.With(fault.Usage, errA)
	if w.Error() != "land: conflicts" || !errors.Is(w, errA) {
		t.Errorf("With keeps the text and the chain: %q", w)
	}
	if fault.Code("no_such_code").Known() || fault.Code("no_such_code").Exit() != fault.ExitFailure {
		t.Error("an unknown code exits 1 and is not known")
	}
}

// codeLiteral finds codes spelled outside the table: a constant named
// Code… or a Code: field given a string, or a conversion to fault.Code.
var codeLiteral = regexp.MustCompile(`\bCode[A-Za-z]*\s*(?:string\s*)?[=:]\s*"([a-z_]+)"|fault\.Code\("([a-z_]+)"\)`)

// TestEveryCodeIsInTheTable: a code spelled anywhere in the product is one
// of the table's, so the table is every code a host can report.
func TestEveryCodeIsInTheTable(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	found := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range codeLiteral.FindAllStringSubmatch(string(b), -1) {
			found++
			c := fault.Code(m[1] + m[2])
			if !c.Known() {
				t.Errorf("%s: code %q is not in fault's table", path, c)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("the scan found no code at all: is the module root right?")
	}
}
