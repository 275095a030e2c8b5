package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func loadScenario(t *testing.T, file string) *Scenario {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ParseScenario(data, file)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// builtinScenarios are the built-in scenarios' files, parsed.
func builtinScenarios(t *testing.T) []*Scenario {
	t.Helper()
	files, err := filepath.Glob("../conformance/scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no built-in scenarios: %v", err)
	}
	var scs []*Scenario
	for _, f := range files {
		scs = append(scs, loadScenario(t, f))
	}
	return scs
}

// runFixed runs the program in file under fixed at its own seed.
func runFixed(t *testing.T, file string) *Result {
	t.Helper()
	sc := loadScenario(t, file)
	r, err := RunScenario(sc, "fixed", nil, sc.Seed)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runFixedBothModes runs a testdata program under fixed with the incremental checker compared
// against the full one and with the full one alone, requires that the two agree, and hands each
// result to check.
func runFixedBothModes(t *testing.T, file string, check func(t *testing.T, r *Result)) {
	for _, mode := range []string{"compare", "full"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(CheckModeEnv, mode)
			r := runFixed(t, file)
			require.Empty(t, r.Mismatches)
			check(t, r)
		})
	}
}

// serverSaid reports whether a line of the server's history contains s.
func serverSaid(r *Result, s string) bool {
	for e := range r.ServerHistory() {
		if strings.Contains(e.Detail, s) {
			return true
		}
	}
	return false
}
