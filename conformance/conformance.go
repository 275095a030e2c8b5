// Package conformance holds the built-in scenarios (the three seed reports and the checks around
// them) and the suite that runs every scenario under every profile it states an outcome for.
package conformance

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/csconform/csconform/harness"
)

//go:embed scenarios/*.yaml
var builtin embed.FS

// Builtin returns the built-in scenarios, sorted by name.
func Builtin() ([]*harness.Scenario, error) {
	entries, err := fs.ReadDir(builtin, "scenarios")
	if err != nil {
		return nil, err
	}
	var out []*harness.Scenario
	for _, e := range entries {
		data, err := builtin.ReadFile(path.Join("scenarios", e.Name()))
		if err != nil {
			return nil, err
		}
		sc, err := harness.ParseScenario(data, e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Find returns a built-in scenario by name, or loads a scenario file when name is a path.
func Find(name string) (*harness.Scenario, error) {
	if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.Contains(name, "/") {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		return harness.ParseScenario(data, name)
	}
	all, err := Builtin()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return nil, fmt.Errorf("unknown scenario %q (built in: %s; or give a path to a .yaml file)", name, strings.Join(names, ", "))
}
