package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSentinelsAreTyped: a package's sentinel errors ("tools: unknown
// task") are made with fault.New or fault.Plain, which the hosts know by
// type and show without the package prefix (command.ErrorText); an
// errors.New value is a message whose words are shown as they are. Only
// the packages below fault, which cannot import it, keep errors.New.
func TestSentinelsAreTyped(t *testing.T) {
	prefixed := regexp.MustCompile(`^[a-z]+: `)
	faultLevel := levels["internal/fault"]
	fset := token.NewFileSet()
	found := 0
	err := filepath.WalkDir("../../internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, err := filepath.Rel("../..", filepath.Dir(path))
		if err != nil {
			return err
		}
		l, ok := level(module + filepath.ToSlash(rel))
		if !ok || l <= faultLevel {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				for _, v := range spec.(*ast.ValueSpec).Values {
					call, ok := v.(*ast.CallExpr)
					if !ok || len(call.Args) != 1 {
						continue
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					if !ok {
						continue
					}
					lit, ok := call.Args[0].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					text, err := strconv.Unquote(lit.Value)
					if err != nil || !prefixed.MatchString(text) {
						continue
					}
					switch x := sel.X.(*ast.Ident); {
					case x != nil && x.Name == "errors" && sel.Sel.Name == "New":
						t.Errorf("%s: sentinel %q is made with errors.New; use fault.Plain (or fault.New with its code)", fset.Position(call.Pos()), text)
					case x != nil && x.Name == "fault":
						found++
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 20 {
		t.Fatalf("found %d sentinels made with fault; the walk no longer sees the packages", found)
	}
}
