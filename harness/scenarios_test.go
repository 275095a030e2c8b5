package harness

import (
	"os"
	"path/filepath"
	"testing"
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
