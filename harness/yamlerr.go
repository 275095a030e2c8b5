package harness

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlTypes are the Go types a scenario file's values decode into, in the file's words: a reader
// of "cannot unmarshal !!str `op` into harness.Step" has to know the Go source to act on it.
var yamlTypes = map[string]string{
	"harness.Scenario":   "a scenario (a mapping of name, hosts, networks, steps, ...)",
	"harness.Step":       "a step (a mapping such as {op: stop, vm: web1})",
	"harness.NetworkDef": "a network (a mapping such as {name: net1})",
	"harness.Expect":     "an expectation (a mapping of violations, mayViolate, cases, states)",
	"sim.Strategy":       "a scheduler (random or pct[:depth])",
	"time.Duration":      `a duration (a string such as "2s", "1m30s" or "48h")`,
	"[]string":           "a list (such as [a, b])",
	"string":             "a string",
	"bool":               "true or false",
	"int":                "a whole number",
	"uint64":             "a whole number, 0 or above",
}

// yamlKinds are YAML's tags for a value, in words.
var yamlKinds = map[string]string{
	"!!str": "the string", "!!int": "the number", "!!float": "the number", "!!bool": "the value",
	"!!seq": "a list", "!!map": "a mapping", "!!null": "an empty value",
}

var (
	cannotRE  = regexp.MustCompile("^(line \\d+: )?cannot unmarshal (!!\\w+)(?: `(.*)`)? into (\\S+)$")
	unknownRE = regexp.MustCompile(`^(line \d+: )?field (\S+) not found in type (\S+)$`)
)

// typeWords is a Go type in the file's words: a map or slice of a known type as such, any other
// type without its package.
func typeWords(t string) string {
	if w, ok := yamlTypes[t]; ok {
		return w
	}
	switch {
	case strings.HasPrefix(t, "map["):
		return "a mapping (such as {key: value})"
	case strings.HasPrefix(t, "[]"):
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(typeWords(t[2:]), "a "), "an ")
	}
	if _, name, ok := strings.Cut(t, "."); ok {
		return "a " + strings.ToLower(name)
	}
	return t
}

// yamlError rewrites the YAML decoder's errors about a value's type or an unknown field in the
// file's words; any other error is returned as it is.
func yamlError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	lines := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		if m := cannotRE.FindStringSubmatch(e); m != nil {
			what := yamlKinds[m[2]]
			if what == "" {
				what = "the value"
			}
			switch {
			case m[3] != "" && m[2] == "!!str":
				what += fmt.Sprintf(" %q", m[3])
			case m[3] != "":
				what += " " + m[3]
			}
			e = fmt.Sprintf("%s%s where %s is wanted", m[1], what, typeWords(m[4]))
		} else if m := unknownRE.FindStringSubmatch(e); m != nil {
			e = fmt.Sprintf("%sunknown field %q in %s (docs/scenario-format.md lists the fields)", m[1], m[2], strings.SplitN(typeWords(m[3]), " (", 2)[0])
		}
		lines = append(lines, e)
	}
	return errors.New(strings.Join(lines, "; "))
}
