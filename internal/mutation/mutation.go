// Package mutation draws mechanical mutants of Go source: one-edit regressions nobody picked, so
// that the detectors are measured on what no one here thought of (impl/mutants.go is the catalogue
// someone did think of). It reads source with go/ast only; building and judging a mutant is
// sample.go's.
//
// A mutant is one byte-range replacement in one file, so applying it leaves the rest of the file
// byte for byte and its diff is the edit alone. Enumeration is deterministic: the same files give
// the same mutants, with the same ids, in the same order.
package mutation

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Operator is a kind of one-edit regression.
type Operator string

// The operators: each is a way a refactor of a race path goes wrong.
const (
	// DropConjunct drops one operand of an && or || chain (a check forgotten).
	DropConjunct Operator = "drop-conjunct"
	// Negate negates an if's condition (a check inverted).
	Negate Operator = "negate-condition"
	// DeleteStmt deletes one statement: a call (a lock, a release, a publish, a state write), an
	// assignment, an increment, a defer or a go.
	DeleteStmt Operator = "delete-statement"
	// StaleCopy uses the copy read earlier where the code reads again: a re-read deleted, or a
	// second read of the same call replaced by the variable the first one filled.
	StaleCopy Operator = "stale-copy"
	// Reread reads again where the code uses its copy: a field of a variable filled by a call,
	// read in a later condition, is read from the call made anew.
	Reread Operator = "reread"
	// Swap swaps two adjacent statements (an order that mattered).
	Swap Operator = "swap-statements"
	// Boundary moves a comparison's boundary: < and <=, > and >= (a threshold off by its edge).
	Boundary Operator = "boundary"
	// ErrorSibling replaces an error type with a sibling of the same package (the catch blocks
	// that branch on it take another path).
	ErrorSibling Operator = "error-sibling"
)

// Operators lists every operator, in the order the report prints them.
var Operators = []Operator{DropConjunct, Negate, DeleteStmt, StaleCopy, Reread, Swap, Boundary, ErrorSibling}

// Mutant is one edit: bytes [Start, End) of File replaced by Repl.
type Mutant struct {
	ID    string   `json:"id"`   // file:line:operator#k, stable while the file is unchanged
	File  string   `json:"file"` // the path as given to Enumerate
	Func  string   `json:"func"` // the enclosing function: Recv.Name or Name
	Line  int      `json:"line"`
	Op    Operator `json:"operator"`
	Start int      `json:"-"`
	End   int      `json:"-"`
	Repl  string   `json:"-"`
	Orig  string   `json:"-"`
}

// Options say what is not worth mutating.
type Options struct {
	// Quiet names calls whose deletion, reordering or arguments change only what is logged or
	// persisted: a method or function name (s.Log, a.log). Their statements are neither deleted nor
	// swapped, and nothing inside them is mutated.
	Quiet []string
	// Frozen names a function whose calls are compile-time constants in an ordinary build (impl's
	// mutated): an if whose condition needs it true is dead code, and no operand holding it is
	// dropped or mutated.
	Frozen string
	// ErrorTypes are the package's error types with their fields (Enumerate reads them from
	// every file of each file's package; nil: the file's own).
	ErrorTypes map[string][]string
}

// Enumerate lists every mutant of files (paths read from disk).
func Enumerate(files []string, o Options) ([]Mutant, error) {
	if o.ErrorTypes == nil {
		o.ErrorTypes = map[string][]string{}
		dirs := map[string]bool{}
		for _, f := range files {
			dirs[filepath.Dir(f)] = true
		}
		for d := range dirs {
			if err := packageErrorTypes(d, o.ErrorTypes); err != nil {
				return nil, err
			}
		}
	}
	var all []Mutant
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ms, err := EnumerateSource(f, src, o)
		if err != nil {
			return nil, err
		}
		all = append(all, ms...)
	}
	return all, nil
}

// EnumerateSource lists the mutants of one file's source; name is used in ids and diffs.
func EnumerateSource(name string, src []byte, o Options) ([]Mutant, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("mutation: %v", err)
	}
	errs := o.ErrorTypes
	if errs == nil {
		errs = errorTypes(f)
	}
	e := &enum{fset: fset, src: src, name: name, o: o, errTypes: errs, inner: map[*ast.BinaryExpr]bool{}}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		e.fn = funcName(fd)
		e.reads = map[string]read{}
		e.vars = map[string]bool{}
		for _, p := range fieldNames(fd.Recv) {
			e.vars[p] = true
		}
		for _, p := range fieldNames(fd.Type.Params) {
			e.vars[p] = true
		}
		for _, p := range fieldNames(fd.Type.Results) {
			e.vars[p] = true
		}
		e.block(fd.Body.List)
	}
	// ids: file:line:operator, numbered where one line has several of a kind
	sort.SliceStable(e.out, func(i, j int) bool { return e.out[i].Start < e.out[j].Start })
	seen := map[string]int{}
	base := filepath.Base(name)
	for i := range e.out {
		m := &e.out[i]
		key := fmt.Sprintf("%s:%d:%s", base, m.Line, m.Op)
		seen[key]++
		m.ID = fmt.Sprintf("%s#%d", key, seen[key])
	}
	return e.out, nil
}

// read is a variable filled by a call: the call's source, and the statements run since (a use in the
// statement right after the read sees what a re-read would, so it is not offered).
type read struct {
	call  string
	since int
}

type enum struct {
	fset     *token.FileSet
	src      []byte
	name     string
	o        Options
	fn       string
	errTypes map[string][]string // error type -> its fields (for the literal's keys)
	// per function: the source of the call each variable was last filled from, and the names
	// declared so far (a re-read assigns one of them again)
	reads map[string]read
	vars  map[string]bool
	inner map[*ast.BinaryExpr]bool // inner nodes of an && or || chain, mutated with its top
	out   []Mutant
}

func (e *enum) off(p token.Pos) int { return e.fset.Position(p).Offset }
func (e *enum) text(n ast.Node) string {
	return string(e.src[e.off(n.Pos()):e.off(n.End())])
}

func (e *enum) add(op Operator, at ast.Node, start, end int, repl string) {
	orig := string(e.src[start:end])
	if orig == repl {
		return
	}
	e.out = append(e.out, Mutant{File: e.name, Func: e.fn, Line: e.fset.Position(at.Pos()).Line, Op: op,
		Start: start, End: end, Repl: repl, Orig: orig})
}

func (e *enum) replace(op Operator, n ast.Node, repl string) {
	e.add(op, n, e.off(n.Pos()), e.off(n.End()), repl)
}

// block walks a statement list: the statements one by one, then the swaps of neighbours.
func (e *enum) block(list []ast.Stmt) {
	for i, s := range list {
		e.stmt(s)
		for k, r := range e.reads {
			r.since++
			e.reads[k] = r
		}
		if i+1 < len(list) && e.swappable(s) && e.swappable(list[i+1]) {
			a, b := list[i], list[i+1]
			start, mid, end := e.off(a.Pos()), e.off(a.End()), e.off(b.Pos())
			between := string(e.src[mid:end])
			e.add(Swap, a, start, e.off(b.End()), e.text(b)+between+e.text(a))
		}
	}
}

// swappable: a simple statement that is not only a log line (declarations would not compile once
// moved after their use).
func (e *enum) swappable(s ast.Stmt) bool {
	switch s := s.(type) {
	case *ast.ExprStmt:
		return !e.quiet(s.X)
	case *ast.AssignStmt:
		return s.Tok != token.DEFINE
	case *ast.IncDecStmt, *ast.SendStmt:
		return true
	}
	return false
}

func (e *enum) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.ExprStmt:
		if !e.quiet(s.X) {
			e.replace(DeleteStmt, s, "")
		}
		e.expr(s.X)
	case *ast.AssignStmt:
		e.assign(s)
	case *ast.IncDecStmt, *ast.SendStmt:
		e.replace(DeleteStmt, s, "")
	case *ast.DeferStmt:
		if !e.quiet(s.Call) {
			e.replace(DeleteStmt, s, "")
		}
		e.expr(s.Call)
	case *ast.GoStmt:
		e.replace(DeleteStmt, s, "")
		e.expr(s.Call)
	case *ast.DeclStmt:
		e.decl(s)
	case *ast.ReturnStmt:
		for _, r := range s.Results {
			e.expr(r)
		}
	case *ast.BlockStmt:
		e.block(s.List)
	case *ast.LabeledStmt:
		e.stmt(s.Stmt)
	case *ast.IfStmt:
		if s.Init != nil {
			e.stmt(s.Init)
		}
		if e.dead(s.Cond) {
			// the body runs only with a catalogue mutant on: not ordinary code
			if s.Else != nil {
				e.stmt(s.Else)
			}
			return
		}
		if _, known := e.constant(s.Cond); !known {
			if u, ok := unparen(s.Cond).(*ast.UnaryExpr); ok && u.Op == token.NOT {
				e.replace(Negate, s.Cond, e.text(u.X))
			} else {
				e.replace(Negate, s.Cond, "!("+e.text(s.Cond)+")")
			}
		}
		e.expr(s.Cond)
		e.block(s.Body.List)
		if s.Else != nil {
			e.stmt(s.Else)
		}
	case *ast.ForStmt:
		if s.Init != nil {
			e.stmt(s.Init)
		}
		if s.Cond != nil {
			e.expr(s.Cond)
		}
		e.block(s.Body.List)
	case *ast.RangeStmt:
		e.expr(s.X)
		for _, x := range []ast.Expr{s.Key, s.Value} {
			if id, ok := x.(*ast.Ident); ok {
				e.vars[id.Name] = true
			}
		}
		e.block(s.Body.List)
	case *ast.SwitchStmt:
		if s.Init != nil {
			e.stmt(s.Init)
		}
		if s.Tag != nil {
			e.expr(s.Tag)
		}
		for _, c := range s.Body.List {
			cc := c.(*ast.CaseClause)
			for _, x := range cc.List {
				e.expr(x)
			}
			e.block(cc.Body)
		}
	case *ast.TypeSwitchStmt:
		if s.Init != nil {
			e.stmt(s.Init)
		}
		for _, c := range s.Body.List {
			e.block(c.(*ast.CaseClause).Body)
		}
	case *ast.SelectStmt:
		for _, c := range s.Body.List {
			e.block(c.(*ast.CommClause).Body)
		}
	}
}

func (e *enum) assign(s *ast.AssignStmt) {
	for _, r := range s.Rhs {
		e.expr(r)
	}
	names := make([]string, 0, len(s.Lhs))
	for _, l := range s.Lhs {
		if id, ok := l.(*ast.Ident); ok {
			names = append(names, id.Name)
		} else {
			names = append(names, "")
			e.expr(l)
		}
	}
	var call string
	if len(s.Rhs) == 1 {
		if c, ok := unparen(s.Rhs[0]).(*ast.CallExpr); ok {
			call = e.text(c)
		}
	}
	switch {
	case s.Tok == token.DEFINE:
		// a second read of the same call into a new name: the stale copy is the first name
		if call != "" && len(names) == 1 {
			for v, r := range sortedReads(e.reads) {
				if r.call == call && v != names[0] {
					e.replace(StaleCopy, s.Rhs[0], v)
					break
				}
			}
		}
	case s.Tok == token.ASSIGN && call != "" && allDeclared(names, e.vars):
		// reading again into names already filled: keep the stale copy
		e.replace(StaleCopy, s, "")
	default:
		e.replace(DeleteStmt, s, "")
	}
	for _, n := range names {
		if n == "" || n == "_" {
			continue
		}
		e.vars[n] = true
		delete(e.reads, n)
	}
	if call != "" && len(names) >= 1 && names[0] != "" && names[0] != "_" {
		e.reads[names[0]] = read{call: call, since: -1}
	}
}

func (e *enum) decl(s *ast.DeclStmt) {
	g, ok := s.Decl.(*ast.GenDecl)
	if !ok {
		return
	}
	for _, sp := range g.Specs {
		vs, ok := sp.(*ast.ValueSpec)
		if !ok {
			continue
		}
		for _, n := range vs.Names {
			e.vars[n.Name] = true
		}
		if vs.Type != nil {
			e.errorType(vs.Type, nil)
		}
		for _, v := range vs.Values {
			e.expr(v)
		}
	}
}

// expr walks an expression for the operators that act inside one.
func (e *enum) expr(x ast.Expr) {
	if x == nil {
		return
	}
	ast.Inspect(x, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			saved, savedVars := e.reads, e.vars
			e.reads, e.vars = map[string]read{}, maps(savedVars)
			for _, p := range fieldNames(n.Type.Params) {
				e.vars[p] = true
			}
			e.block(n.Body.List)
			e.reads, e.vars = saved, savedVars
			return false
		case *ast.BinaryExpr:
			switch n.Op {
			case token.LAND, token.LOR:
				e.dropOperands(n)
			case token.LSS:
				e.add(Boundary, n, e.off(n.OpPos), e.off(n.OpPos)+1, "<=")
			case token.LEQ:
				e.add(Boundary, n, e.off(n.OpPos), e.off(n.OpPos)+2, "<")
			case token.GTR:
				e.add(Boundary, n, e.off(n.OpPos), e.off(n.OpPos)+1, ">=")
			case token.GEQ:
				e.add(Boundary, n, e.off(n.OpPos), e.off(n.OpPos)+2, ">")
			}
		case *ast.SelectorExpr:
			// a field of a copy filled by a call, read anew from the call
			// (not a row's ID: a record's identity never changes, so its re-read is the copy)
			if id, ok := n.X.(*ast.Ident); ok && n.Sel.Name != "ID" {
				if r, ok := e.reads[id.Name]; ok && r.since >= 1 {
					e.replace(Reread, id, "("+r.call+")")
				}
			}
		case *ast.CompositeLit:
			e.errorType(n.Type, n.Elts)
		case *ast.CallExpr:
			// a constant switch, or a log line's arguments (what they print is not behaviour)
			if e.isFrozen(n) || e.quiet(n) {
				return false
			}
		}
		return true
	})
}

// dropOperands mutates the top of an && (or ||) chain once per operand dropped; the operands are
// walked by expr's own descent, so a chain's inner nodes (same operator) are skipped here.
func (e *enum) dropOperands(n *ast.BinaryExpr) {
	if e.inner[n] {
		return
	}
	ops := flatten(n, n.Op)
	if _, known := e.constant(n); known {
		// the chain's value is fixed by a frozen operand (mutated(X) && …): dropping any other
		// operand changes nothing in an ordinary build
		ops = nil
	}
	for x := n; ; {
		l, ok := x.X.(*ast.BinaryExpr)
		if !ok || l.Op != n.Op {
			break
		}
		e.inner[l] = true
		x = l
	}
	sep := " && "
	if n.Op == token.LOR {
		sep = " || "
	}
	for i, o := range ops {
		if _, known := e.constant(o); known {
			continue // an operand constant in an ordinary build: dropping it changes nothing
		}
		var keep []string
		for j, p := range ops {
			if j != i {
				keep = append(keep, e.text(p))
			}
		}
		e.add(DropConjunct, o, e.off(n.Pos()), e.off(n.End()), strings.Join(keep, sep))
	}
}

// errorType offers a sibling for a type naming one of the package's error types (X or *X); for a
// composite literal, only siblings that have every field it sets.
func (e *enum) errorType(t ast.Expr, elts []ast.Expr) {
	if t == nil {
		return
	}
	if st, ok := t.(*ast.StarExpr); ok {
		t = st.X
	}
	id, ok := t.(*ast.Ident)
	if !ok {
		return
	}
	if _, ok := e.errTypes[id.Name]; !ok {
		return
	}
	var keys []string
	for _, el := range elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok {
				keys = append(keys, k.Name)
			}
		}
	}
	sibs := make([]string, 0, len(e.errTypes))
	for name := range e.errTypes {
		sibs = append(sibs, name)
	}
	sort.Strings(sibs)
	for _, s := range sibs {
		if s == id.Name || (elts != nil && !subset(keys, e.errTypes[s])) {
			continue
		}
		e.replace(ErrorSibling, id, s)
	}
}

// quiet: a call whose only effect is a log line.
func (e *enum) quiet(x ast.Expr) bool {
	c, ok := unparen(x).(*ast.CallExpr)
	if !ok {
		return false
	}
	switch f := c.Fun.(type) {
	case *ast.SelectorExpr:
		return slices.Contains(e.o.Quiet, f.Sel.Name)
	case *ast.Ident:
		return slices.Contains(e.o.Quiet, f.Name)
	}
	return false
}

// isFrozen: x is a call of Options.Frozen.
func (e *enum) isFrozen(x ast.Node) bool {
	c, ok := x.(*ast.CallExpr)
	if !ok || e.o.Frozen == "" {
		return false
	}
	id, ok := c.Fun.(*ast.Ident)
	return ok && id.Name == e.o.Frozen
}

// constant: the value x has in an ordinary build, where every frozen call is false, if that alone
// decides it (mutated(X), !mutated(X), !(mutated(X) && force), …).
func (e *enum) constant(x ast.Expr) (val, known bool) {
	x = unparen(x)
	if e.isFrozen(x) {
		return false, true
	}
	switch x := x.(type) {
	case *ast.UnaryExpr:
		if x.Op == token.NOT {
			v, ok := e.constant(x.X)
			return !v, ok
		}
	case *ast.BinaryExpr:
		l, lok := e.constant(x.X)
		r, rok := e.constant(x.Y)
		switch x.Op {
		case token.LAND:
			if (lok && !l) || (rok && !r) {
				return false, true
			}
			return l && r, lok && rok
		case token.LOR:
			if (lok && l) || (rok && r) {
				return true, true
			}
			return l || r, lok && rok
		}
	}
	return false, false
}

// dead: a condition that is false in an ordinary build (its body runs only with a catalogue mutant).
func (e *enum) dead(x ast.Expr) bool {
	v, ok := e.constant(x)
	return ok && !v
}

// errorTypes: the struct types of the file whose names end in Error, with their field names.
func errorTypes(f *ast.File) map[string][]string {
	out := map[string][]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, sp := range g.Specs {
			ts := sp.(*ast.TypeSpec)
			st, ok := ts.Type.(*ast.StructType)
			if !ok || !strings.HasSuffix(ts.Name.Name, "Error") {
				continue
			}
			out[ts.Name.Name] = fieldNames(st.Fields)
		}
	}
	return out
}

// packageErrorTypes adds the error types of the package in dir (its non-test files).
func packageErrorTypes(dir string, into map[string][]string) error {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("mutation: %v", err)
		}
		for k, v := range errorTypes(f) {
			into[k] = v
		}
	}
	return nil
}

func flatten(x ast.Expr, op token.Token) []ast.Expr {
	if b, ok := x.(*ast.BinaryExpr); ok && b.Op == op {
		return append(flatten(b.X, op), flatten(b.Y, op)...)
	}
	return []ast.Expr{x}
}

func unparen(x ast.Expr) ast.Expr {
	for {
		p, ok := x.(*ast.ParenExpr)
		if !ok {
			return x
		}
		x = p.X
	}
}

func fieldNames(fl *ast.FieldList) []string {
	if fl == nil {
		return nil
	}
	var out []string
	for _, f := range fl.List {
		for _, n := range f.Names {
			out = append(out, n.Name)
		}
	}
	return out
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func allDeclared(names []string, vars map[string]bool) bool {
	for _, n := range names {
		if n != "_" && (n == "" || !vars[n]) {
			return false
		}
	}
	return len(names) > 0
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func maps(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// sortedReads iterates the reads in name order (a map's order would make enumeration vary).
func sortedReads(m map[string]read) func(func(string, read) bool) {
	return func(yield func(string, read) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

// Apply returns src with m's edit made.
func Apply(src []byte, m Mutant) ([]byte, error) {
	if m.End > len(src) || m.Start > m.End || string(src[m.Start:m.End]) != m.Orig {
		return nil, fmt.Errorf("mutation: %s does not match its source (the file changed since it was drawn)", m.ID)
	}
	out := make([]byte, 0, len(src)-len(m.Orig)+len(m.Repl))
	out = append(out, src[:m.Start]...)
	out = append(out, m.Repl...)
	return append(out, src[m.End:]...), nil
}

// Diff renders m as a unified diff of the lines it touches.
func Diff(src []byte, m Mutant) string {
	lineStart := strings.LastIndexByte(string(src[:m.Start]), '\n') + 1
	end := m.End
	if i := strings.IndexByte(string(src[end:]), '\n'); i >= 0 {
		end += i
	} else {
		end = len(src)
	}
	before := string(src[lineStart:end])
	after := string(src[lineStart:m.Start]) + m.Repl + string(src[m.End:end])
	first := strings.Count(string(src[:lineStart]), "\n") + 1
	var b strings.Builder
	bl, al := splitLines(before), splitLines(after)
	fmt.Fprintf(&b, "--- %s\n+++ %s (%s)\n@@ -%d,%d +%d,%d @@ %s\n", m.File, m.File, m.ID, first, len(bl), first, len(al), m.Func)
	for _, l := range bl {
		b.WriteString("-" + l + "\n")
	}
	for _, l := range al {
		if strings.TrimSpace(l) != "" || len(al) > 1 {
			b.WriteString("+" + l + "\n")
		}
	}
	return b.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
