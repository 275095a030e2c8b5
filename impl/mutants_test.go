package impl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every mutant of the catalogue has a mutation point in the code, and every point names a mutant of
// the catalogue: a catalogue entry without a point would count as a survivor that nothing can kill.
func TestEveryMutantHasAPoint(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.HasPrefix(f, "mutants") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	consts := map[Mutant]string{}
	b, err := os.ReadFile("mutants.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[1] == "Mutant" && f[2] == "=" {
			consts[Mutant(strings.Trim(f[3], `"`))] = f[0]
		}
	}
	if len(consts) != len(Mutants) || len(Mutants) < 20 {
		t.Fatalf("%d constants, %d catalogue entries (want the same, at least 20)", len(consts), len(Mutants))
	}
	seen := map[Mutant]bool{}
	for _, m := range Mutants {
		if seen[m.ID] {
			t.Errorf("%s is in the catalogue twice", m.ID)
		}
		seen[m.ID] = true
		name, ok := consts[m.ID]
		if !ok {
			t.Errorf("%s has no constant", m.ID)
			continue
		}
		if !strings.Contains(src.String(), "mutated("+name+")") {
			t.Errorf("%s (%s) has no mutation point in impl", m.ID, name)
		}
	}
	if mutantsBuilt {
		return
	}
	if err := SetMutant(MutGracefulOnePing); err == nil || mutated(MutGracefulOnePing) {
		t.Error("an ordinary build switched a mutant on")
	}
}
