package snapshot

import (
	"context"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

func TestPatchPathExactBytes(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	// CRLF line ends and a trailing-space line must come out unconverted;
	// a text conversion attribute must not apply.
	sh(t, wt, `printf 'one\r\ntwo \r\n' > 'sp ace.txt'; printf '\000\001\002' > bin.dat; printf 'gone\n' > del.txt; printf '* text=auto eol=lf\n' > .gitattributes`)
	e := openEngine(t, wt)
	a := capture(t, e, "")
	sh(t, wt, `printf 'one\r\nTWO \r\n' > 'sp ace.txt'; printf '\000\001\003\004' > bin.dat; rm del.txt; printf 'new\n' > add.txt`)
	b := capture(t, e, "")
	ctx := context.Background()

	p, err := e.PatchPath(ctx, a.Tree, b.Tree, "sp ace.txt")
	if err != nil {
		t.Fatal(err)
	}
	if p.Binary || !strings.Contains(string(p.Patch), "\n-two \r\n+TWO \r\n") || p.OldSize != 11 || p.NewSize != 11 {
		t.Fatalf("text patch = %+v\n%q", p, p.Patch)
	}
	if strings.Contains(string(p.Patch), "bin.dat") {
		t.Fatalf("patch of one path mentions another:\n%s", p.Patch)
	}

	p, err = e.PatchPath(ctx, a.Tree, b.Tree, "bin.dat")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Binary || !strings.Contains(string(p.Patch), "GIT binary patch") || p.OldSize != 3 || p.NewSize != 4 {
		t.Fatalf("binary patch = %+v\n%s", p, p.Patch)
	}

	p, err = e.PatchPath(ctx, a.Tree, b.Tree, "del.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(p.Patch), "deleted file mode") || p.NewSize != -1 || p.OldSize != 5 {
		t.Fatalf("deleted patch = %+v\n%s", p, p.Patch)
	}
	p, err = e.PatchPath(ctx, a.Tree, b.Tree, "add.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(p.Patch), "+new\n") || p.OldSize != -1 {
		t.Fatalf("added patch = %+v\n%s", p, p.Patch)
	}

	// A pathspec character is a literal name, and an unchanged path has
	// an empty patch.
	p, err = e.PatchPath(ctx, a.Tree, b.Tree, "*.txt")
	if err != nil || len(p.Patch) != 0 {
		t.Fatalf("PatchPath(*.txt) = %q, %v; want an empty patch", p.Patch, err)
	}
	if _, err := e.PatchPath(ctx, a.Tree, b.Tree, ""); err == nil {
		t.Fatal("PatchPath with no path succeeded")
	}
}
