package mutation

import (
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testOpts = Options{Quiet: []string{"Log"}, Frozen: "mutated"}

func enumerateTestdata(t *testing.T) ([]byte, []Mutant) {
	t.Helper()
	src, err := os.ReadFile("testdata/race.go.txt")
	require.NoError(t, err)
	ms, err := EnumerateSource("race.go", src, testOpts)
	require.NoError(t, err)
	return src, ms
}

// Every operator finds its points in a small race path, each mutant applies to a file that still
// parses, and what is not worth mutating (log lines, the catalogue's dead code) is left alone.
func TestEveryOperatorAppliesAndParses(t *testing.T) {
	src, ms := enumerateTestdata(t)
	byOp := map[Operator][]string{}
	for _, m := range ms {
		out, err := Apply(src, m)
		require.NoError(t, err, m.ID)
		_, err = parser.ParseFile(token.NewFileSet(), "x.go", out, 0)
		require.NoError(t, err, "%s does not parse:\n%s", m.ID, Diff(src, m))
		byOp[m.Op] = append(byOp[m.Op], strings.TrimSpace(m.Orig)+" => "+strings.TrimSpace(m.Repl))
	}
	cases := []struct {
		op   Operator
		want string
	}{
		{DropConjunct, `v.state == "Running" && !force => !force`},
		{DropConjunct, `v.state == "Running" && !force => v.state == "Running"`},
		{Negate, `!force => !(v.state == "Running" && !force)`},
		{DeleteStmt, `s.mu.Lock() => `},
		{DeleteStmt, `defer s.mu.Unlock() => `},
		{DeleteStmt, `s.publish("one") => `},
		{DeleteStmt, `s.count++ => `},
		{StaleCopy, `v = s.read(id) => `},
		{StaleCopy, `s.read(id) => v`},
		{Reread, `v => (s.read(id))`},
		{Swap, "s.publish(\"one\")\n\tv = s.read(id) => v = s.read(id)\n\ts.publish(\"one\")"},
		{Boundary, `< => <=`},
		{ErrorSibling, `ConcurrentOperationError => CloudRuntimeError`},
	}
	for _, c := range cases {
		if c.op == Negate {
			// the whole condition is the mutant's Orig
			assert.Contains(t, byOp[c.op], `v.state == "Running" && !force => !(v.state == "Running" && !force)`)
			continue
		}
		assert.Contains(t, byOp[c.op], c.want, "operator %s", c.op)
	}
	for _, m := range ms {
		assert.NotContains(t, m.Orig+m.Repl, `s.Log(`, "a log line is neither deleted nor swapped: %s", m.ID)
		assert.NotContains(t, m.Orig, `"dead code"`, "the body of if mutated(...) is dead code: %s", m.ID)
		assert.False(t, m.Orig == `!mutated("m2")`, "dropping a constant operand changes nothing: %s", m.ID)
		assert.NotEqual(t, `mutated("m3") && force`, m.Orig, "inside a chain a frozen call makes constant, dropping changes nothing: %s", m.ID)
	}
	// the error literal with a Msg has no sibling without one
	assert.NotContains(t, byOp[ErrorSibling], `ConcurrentOperationError => AgentUnavailableError`)
	// a row's identity never changes: its re-read is the copy
	for _, m := range ms {
		if m.Op == Reread {
			assert.NotContains(t, string(src[m.End:m.End+3]), ".ID", "re-read of an ID: %s", m.ID)
		}
	}
	// a use of v right after its read sees what a re-read would: not offered
	for _, m := range ms {
		if m.Op == Reread {
			assert.NotEqual(t, 32, m.Line, "the condition right after v's first read")
		}
	}
}

// The same source gives the same mutants with the same ids; ids are unique.
func TestEnumerationIsDeterministic(t *testing.T) {
	_, a := enumerateTestdata(t)
	_, b := enumerateTestdata(t)
	require.Equal(t, a, b)
	ids := map[string]bool{}
	for _, m := range a {
		require.False(t, ids[m.ID], "duplicate id %s", m.ID)
		ids[m.ID] = true
		require.Equal(t, "S.cleanup", m.Func)
	}
}

// A mutant drawn from another version of the file is refused, not applied to the wrong bytes.
func TestApplyRefusesAChangedFile(t *testing.T) {
	src, ms := enumerateTestdata(t)
	changed := append([]byte("// a new first line\n"), src...)
	_, err := Apply(changed, ms[0])
	require.ErrorContains(t, err, "does not match its source")
}

func TestDiffShowsTheEdit(t *testing.T) {
	src, ms := enumerateTestdata(t)
	for _, m := range ms {
		if m.Op == Boundary {
			d := Diff(src, m)
			assert.Contains(t, d, "-\tif v.count < 3 && !mutated(\"m2\") && !(mutated(\"m3\") && force) {\n+\tif v.count <= 3 && !mutated(\"m2\") && !(mutated(\"m3\") && force) {\n")
			assert.Contains(t, d, "@@ -41,1 +41,1 @@ S.cleanup")
			return
		}
	}
	t.Fatal("no boundary mutant")
}

// Nothing inside a log line's arguments is mutated: what it prints is not behaviour.
func TestNothingInsideAQuietCall(t *testing.T) {
	src := []byte("package p\n\nfunc (s *S) f(id int) {\n\tv := s.read(id)\n\ts.work()\n\ts.Log(\"x\", v.Name, id < 3)\n}\n")
	ms, err := EnumerateSource("p.go", src, testOpts)
	require.NoError(t, err)
	for _, m := range ms {
		require.False(t, m.Line == 6, "mutated inside a log call: %s", Diff(src, m))
	}
	require.NotEmpty(t, ms)
}
