package impl

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fidelityRow is one row of docs/fidelity.md: a Java method and the Go functions that mirror it.
type fidelityRow struct {
	line int
	java string
	gos  []string
}

const fidelityHeader = "| Java class.method | Source | Go function | Divergences (and why) |"

// fidelityRows parses the tables of docs/fidelity.md. Every table with the fidelity header counts;
// each row needs four cells and at least one `Go function` in backquotes in the third.
func fidelityRows(text string) ([]fidelityRow, error) {
	var rows []fidelityRow
	in := false
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == fidelityHeader:
			in = true
			continue
		case !strings.HasPrefix(l, "|"):
			in = false
			continue
		case !in || strings.HasPrefix(l, "|---"):
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		if len(cells) != 4 {
			return nil, fmt.Errorf("line %d: %d cells, want 4: %s", i+1, len(cells), l)
		}
		r := fidelityRow{line: i + 1, java: strings.TrimSpace(cells[0])}
		parts := strings.Split(cells[2], "`")
		for j := 1; j < len(parts); j += 2 {
			r.gos = append(r.gos, parts[j])
		}
		if r.java == "" || len(r.gos) == 0 {
			return nil, fmt.Errorf("line %d: a row needs a Java method and a Go function in backquotes: %s", i+1, l)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no row under a %q header", fidelityHeader)
	}
	return rows, nil
}

// implFuncs names every function of package impl as "name" or "Type.method".
func implFuncs(t *testing.T) map[string]bool {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range pkgs["impl"].Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if fd.Recv == nil || len(fd.Recv.List) == 0 {
				names[fd.Name.Name] = true
				continue
			}
			typ := fd.Recv.List[0].Type
			if st, ok := typ.(*ast.StarExpr); ok {
				typ = st.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				names[id.Name+"."+fd.Name.Name] = true
			}
		}
	}
	return names
}

// TestFidelityTableNamesExistingFunctions keeps docs/fidelity.md current: every Go function it names
// must exist in impl.
func TestFidelityTableNamesExistingFunctions(t *testing.T) {
	text, err := os.ReadFile("../docs/fidelity.md")
	require.NoError(t, err)
	rows, err := fidelityRows(string(text))
	require.NoError(t, err)
	funcs := implFuncs(t)
	for _, r := range rows {
		for _, g := range r.gos {
			if !funcs[g] {
				t.Errorf("docs/fidelity.md line %d (%s): Go function %s does not exist in impl", r.line, r.java, g)
			}
		}
	}
}

func TestFidelityRowsRefusesBadTables(t *testing.T) {
	cases := []struct{ name, text, err string }{
		{"no table", "# nothing here\n", "no row"},
		{"header only", fidelityHeader + "\n|---|---|---|---|\n", "no row"},
		{"three cells", fidelityHeader + "\n| A.b | S | `f` |\n", "3 cells"},
		{"no Go function", fidelityHeader + "\n| A.b | S | f | none |\n", "Go function in backquotes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := fidelityRows(c.text)
			require.ErrorContains(t, err, c.err)
		})
	}
	rows, err := fidelityRows(fidelityHeader + "\n|---|---|---|---|\n| A.b | S | `Server.x`, `y` | |\n")
	require.NoError(t, err)
	require.Equal(t, []string{"Server.x", "y"}, rows[0].gos)
}
