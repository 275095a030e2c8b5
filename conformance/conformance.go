// Package conformance holds the built-in scenarios (the three seed reports and the checks around
// them) and the suite that runs every scenario under every profile it states an outcome for.
package conformance

import (
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/csconform/csconform/harness"
)

//go:embed scenarios/*.yaml
var builtin embed.FS

// builtinFile is one built-in scenario: its file as written and parsed.
type builtinFile struct {
	data []byte
	sc   *harness.Scenario
}

// builtinFiles reads and parses every built-in scenario, in directory order.
func builtinFiles() ([]builtinFile, error) {
	entries, err := fs.ReadDir(builtin, "scenarios")
	if err != nil {
		return nil, err
	}
	var out []builtinFile
	for _, e := range entries {
		data, err := builtin.ReadFile(path.Join("scenarios", e.Name()))
		if err != nil {
			return nil, err
		}
		sc, err := harness.ParseScenario(data, e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, builtinFile{data, sc})
	}
	return out, nil
}

// Builtin returns the built-in scenarios, sorted by name.
func Builtin() ([]*harness.Scenario, error) {
	files, err := builtinFiles()
	if err != nil {
		return nil, err
	}
	var out []*harness.Scenario
	for _, f := range files {
		out = append(out, f.sc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Source returns a built-in scenario's file as written (a user's starting point for their own).
func Source(name string) ([]byte, error) {
	files, err := builtinFiles()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		if f.sc.Name == name {
			return f.data, nil
		}
		names = append(names, f.sc.Name)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("unknown scenario %q (built in: %s)", name, strings.Join(names, ", "))
}

// MaxScenarioBytes caps a scenario file: the built-in ones are a few KiB, and a path such as
// /dev/zero must not be read for ever.
const MaxScenarioBytes = 4 << 20

// readCapped reads a file of at most max bytes, refusing a larger one without reading it all.
func readCapped(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d MiB: not a scenario file", name, max>>20)
	}
	return data, nil
}

// Find returns a built-in scenario by name, or loads a scenario file when name is a path.
func Find(name string) (*harness.Scenario, error) {
	if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.Contains(name, "/") {
		data, err := readCapped(name, MaxScenarioBytes)
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
