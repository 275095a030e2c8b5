package harness

import (
	"encoding"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/impl"
)

// scenarioDoc is the scenario format's reference, which these tests hold to the parser.
const scenarioDoc = "../docs/scenario-format.md"

// docSection is a heading of a Markdown page and its own lines: those up to the next heading, of any
// level.
type docSection struct {
	level int
	title string
	line  int // the heading's line number
	body  []string
	yaml  []docFence
}

// docFence is a ```yaml block.
type docFence struct {
	line int // the line of its opening fence
	text string
}

// readScenarioDoc splits the reference into sections (headings inside code blocks are not headings).
func readScenarioDoc(t *testing.T) []docSection {
	t.Helper()
	data, err := os.ReadFile(scenarioDoc)
	if err != nil {
		t.Fatalf("the scenario format's reference: %v", err)
	}
	secs := []docSection{{title: "(before the first heading)"}}
	var fence *docFence
	var fenceLang string
	for i, l := range strings.Split(string(data), "\n") {
		cur := &secs[len(secs)-1]
		if lang, ok := strings.CutPrefix(l, "```"); ok {
			if fence == nil {
				fence, fenceLang = &docFence{line: i + 1}, strings.TrimSpace(lang)
			} else {
				if fenceLang == "yaml" {
					cur.yaml = append(cur.yaml, *fence)
				}
				fence = nil
			}
			continue
		}
		if fence != nil {
			fence.text += l + "\n"
			continue
		}
		if m := regexp.MustCompile(`^(#+) (.*)$`).FindStringSubmatch(l); m != nil {
			secs = append(secs, docSection{level: len(m[1]), title: strings.TrimSpace(m[2]), line: i + 1})
			continue
		}
		cur.body = append(cur.body, l)
	}
	if fence != nil {
		t.Fatalf("%s:%d: a code block that is never closed", scenarioDoc, fence.line)
	}
	return secs
}

// yamlField is one key a struct accepts in YAML.
type yamlField struct {
	name string
	typ  reflect.Type
}

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	yamlUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
)

// yamlScalar says whether YAML reads a type from a scalar through its own method (sim.Strategy,
// time.Time): it has no fields of its own to document.
func yamlScalar(rt reflect.Type) bool {
	p := reflect.PointerTo(rt)
	return rt.Implements(textUnmarshaler) || p.Implements(textUnmarshaler) ||
		rt.Implements(yamlUnmarshaler) || p.Implements(yamlUnmarshaler)
}

// yamlKeys lists the keys a struct accepts, as go.yaml.in/yaml/v3 reads them: the yaml tag's name,
// else the field's name in lower case; "-" and unexported fields are not read; an inline struct's
// keys are its parent's.
func yamlKeys(t *testing.T, rt reflect.Type) []yamlField {
	t.Helper()
	var out []yamlField
	for i := range rt.NumField() {
		f := rt.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if slices.Contains(strings.Split(opts, ","), "inline") {
			it := f.Type
			for it.Kind() == reflect.Pointer {
				it = it.Elem()
			}
			if it.Kind() != reflect.Struct {
				t.Fatalf("%s.%s is an inline %s: any key is accepted, teach this test what to look for", rt, f.Name, it.Kind())
			}
			out = append(out, yamlKeys(t, it)...)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, yamlField{name, f.Type})
	}
	return out
}

// scenarioFields walks the scenario's types from root, through pointers, slices and maps (whose keys
// are the scenario's own names: profiles, cases, VMs, configuration keys), and returns the keys each
// struct type accepts, by the type's name.
func scenarioFields(t *testing.T, root reflect.Type) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	var walk func(rt reflect.Type, where string)
	walk = func(rt reflect.Type, where string) {
		for rt.Kind() == reflect.Pointer {
			rt = rt.Elem()
		}
		if yamlScalar(rt) {
			return
		}
		switch rt.Kind() {
		case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		case reflect.Slice, reflect.Array, reflect.Map:
			walk(rt.Elem(), where)
		case reflect.Struct:
			if rt.Name() == "" {
				t.Fatalf("%s is an unnamed struct: give it a named type and a section of its own in %s", where, scenarioDoc)
			}
			if _, seen := out[rt.Name()]; seen {
				return
			}
			out[rt.Name()] = []string{}
			for _, f := range yamlKeys(t, rt) {
				out[rt.Name()] = append(out[rt.Name()], f.name)
				walk(f.typ, rt.Name()+"."+f.name)
			}
		default:
			t.Fatalf("%s is a %s (%s): teach this test how YAML reads it", where, rt.Kind(), rt)
		}
	}
	walk(root, root.Name())
	return out
}

var fieldRow = regexp.MustCompile("^\\| `([^`]+)` \\|")

// TestScenarioDocNamesEveryField: every key the parser accepts, at every level, has a row in its
// type's field table in docs/scenario-format.md (the section whose heading names the Go type, as
// "(`Step`)"), and every row names a key the type still accepts.
func TestScenarioDocNamesEveryField(t *testing.T) {
	fields := scenarioFields(t, reflect.TypeFor[Scenario]())
	// the walk itself: it must reach the nested types and their keys, or the test below checks nothing
	if !slices.Contains(fields["Scenario"], "steps") || !slices.Contains(fields["Step"], "fault") ||
		!slices.Contains(fields["NetworkDef"], "primed") || !slices.Contains(fields["Expect"], "mayViolate") {
		t.Fatalf("the walk of the scenario's types found %v: it misses keys the parser accepts", fields)
	}
	secs := readScenarioDoc(t)
	types := make([]string, 0, len(fields))
	for name := range fields {
		types = append(types, name)
	}
	slices.Sort(types)
	for _, typ := range types {
		i := slices.IndexFunc(secs, func(s docSection) bool { return strings.Contains(s.title, "(`"+typ+"`)") })
		if i < 0 {
			t.Errorf("%s has no section for %s (a heading with (`%s`) and a table of its fields): undocumented fields %s",
				scenarioDoc, typ, typ, strings.Join(fields[typ], ", "))
			continue
		}
		var rows []string
		for _, l := range secs[i].body {
			if m := fieldRow.FindStringSubmatch(l); m != nil {
				rows = append(rows, m[1])
			}
		}
		var missing, stale []string
		for _, f := range fields[typ] {
			if !slices.Contains(rows, f) {
				missing = append(missing, "`"+f+"`")
			}
		}
		for _, r := range rows {
			if !slices.Contains(fields[typ], r) {
				stale = append(stale, "`"+r+"`")
			}
		}
		if len(missing) > 0 {
			t.Errorf("%s:%d (%s): the parser accepts %s, which the field table does not document", scenarioDoc, secs[i].line, secs[i].title, strings.Join(missing, ", "))
		}
		if len(stale) > 0 {
			t.Errorf("%s:%d (%s): the field table documents %s, which %s does not accept", scenarioDoc, secs[i].line, secs[i].title, strings.Join(stale, ", "), typ)
		}
	}
}

// docPrelude is the scenario the step examples run after: the first YAML block of the section
// "Examples", with the number of steps it has.
func docPrelude(t *testing.T, secs []docSection) (string, int) {
	t.Helper()
	i := slices.IndexFunc(secs, func(s docSection) bool { return s.title == "Examples" })
	if i < 0 || len(secs[i].yaml) == 0 {
		t.Fatalf("%s has no section Examples with the prelude the step examples run after", scenarioDoc)
	}
	text := secs[i].yaml[0].text
	sc, err := ParseScenario([]byte(text), scenarioDoc+" (the examples' prelude)")
	if err != nil {
		t.Fatal(err)
	}
	return text, len(sc.Steps)
}

// parseDocExample parses a YAML block of the reference: a whole scenario (it begins with name:) or a
// list of steps (it begins with -), run after the prelude. It returns the example's own steps.
func parseDocExample(prelude string, n int, f docFence) ([]Step, error) {
	src := scenarioDoc + ":" + strconv.Itoa(f.line)
	first := strings.TrimSpace(strings.SplitN(strings.TrimSpace(f.text), "\n", 2)[0])
	switch {
	case strings.HasPrefix(first, "name:"):
		sc, err := ParseScenario([]byte(f.text), src)
		if err != nil {
			return nil, err
		}
		return sc.Steps, nil
	case strings.HasPrefix(first, "- "):
		src += " (after the examples' prelude; its line numbers count from the prelude's first)"
		var b strings.Builder
		b.WriteString(prelude)
		for l := range strings.SplitSeq(strings.TrimRight(f.text, "\n"), "\n") {
			b.WriteString("  " + l + "\n")
		}
		sc, err := ParseScenario([]byte(b.String()), src)
		if err != nil {
			return nil, err
		}
		return sc.Steps[n:], nil
	}
	return nil, fmt.Errorf("%s: a YAML example must be a whole scenario (name: …) or a list of steps (- …), so that it can be checked; it begins %q", src, first)
}

// TestScenarioDocExamplesParse: every YAML example of docs/scenario-format.md is a scenario the
// parser accepts (a list of steps, after the examples' prelude).
func TestScenarioDocExamplesParse(t *testing.T) {
	secs := readScenarioDoc(t)
	prelude, n := docPrelude(t, secs)
	count := 0
	for _, s := range secs {
		for _, f := range s.yaml {
			count++
			if _, err := parseDocExample(prelude, n, f); err != nil {
				t.Errorf("%v", err)
			}
		}
	}
	if count < len(Ops)+len(Untils)+len(faults.Kinds) {
		t.Errorf("%s has %d YAML examples, fewer than one per op, until condition and fault", scenarioDoc, count)
	}
}

// TestScenarioDocNamesEveryKind: every op, until condition and fault the parser accepts has a section
// of its own in docs/scenario-format.md (a heading `kind`) with an example that uses it; every
// invariant, case result and profile expect may name is named.
func TestScenarioDocNamesEveryKind(t *testing.T) {
	secs := readScenarioDoc(t)
	prelude, n := docPrelude(t, secs)
	var faultNames []string
	for _, k := range faults.Kinds {
		faultNames = append(faultNames, k.Name)
	}
	kinds := []struct {
		what  string
		names []string
		uses  func(st Step, name string) bool
	}{
		{"op", Ops, func(st Step, name string) bool { return st.Op == name }},
		{"until condition", Untils, func(st Step, name string) bool { return st.Until == name }},
		{"fault", faultNames, func(st Step, name string) bool { return st.Fault == name }},
	}
	for _, k := range kinds {
		var missing []string
		for _, name := range k.names {
			i := slices.IndexFunc(secs, func(s docSection) bool { return s.title == "`"+name+"`" })
			if i < 0 {
				missing = append(missing, "`"+name+"`")
				continue
			}
			used := false
			for _, f := range secs[i].yaml {
				steps, err := parseDocExample(prelude, n, f)
				if err != nil {
					t.Errorf("%v", err)
				}
				used = used || slices.ContainsFunc(steps, func(st Step) bool { return k.uses(st, name) })
			}
			if !used {
				t.Errorf("%s:%d: the section of the %s `%s` has no example that uses it", scenarioDoc, secs[i].line, k.what, name)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%s has no section (a heading `name`) for the %s(s) %s", scenarioDoc, k.what, strings.Join(missing, ", "))
		}
	}
	data, err := os.ReadFile(scenarioDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		what  string
		names []string
	}{
		{"invariant", invariantNames},
		{"case result", CaseResults},
		{"profile", impl.ProfileNames()},
	} {
		var missing []string
		for _, name := range v.names {
			if !strings.Contains(string(data), "`"+name+"`") {
				missing = append(missing, "`"+name+"`")
			}
		}
		if len(missing) > 0 {
			t.Errorf("%s does not name the %s(s) expect accepts: %s", scenarioDoc, v.what, strings.Join(missing, ", "))
		}
	}
}
