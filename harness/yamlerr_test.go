package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A scenario file's type errors are in the file's words: a line, what it holds and what is wanted,
// never a Go type (harness.Step, time.Duration) the reader would need the source to decode.
func TestScenarioYAMLErrorsInTheFilesWords(t *testing.T) {
	head := "name: x\nhosts: [h1]\n"
	cases := []struct{ yaml, want string }{
		{head + "steps:\n  - op\n", `line 4: the string "op" where a step (a mapping such as {op: stop, vm: web1}) is wanted`},
		{head + "steps:\n  - {wait: 2, op: stop, vm: v}\n", `line 4: the number 2 where a duration (a string such as "2s", "1m30s" or "48h") is wanted`},
		{"name: x\nhosts: h1\n", `line 2: the string "h1" where a list (such as [a, b]) is wanted`},
		{head + "networks: [{name: n1, primed: maybe}]\n", `line 3: the string "maybe" where true or false is wanted`},
		{head + "bogus: 1\n", `line 3: unknown field "bogus" in a scenario (docs/scenario-format.md lists the fields)`},
		{head + "steps:\n  - {op: stop, vm: v, bogus: 1}\n", `line 4: unknown field "bogus" in a step`},
		{head + "config: [a]\n", "line 3: a list where a mapping (such as {key: value}) is wanted"},
		{head + "seed: -1\n", "line 3: the number -1 where a whole number, 0 or above is wanted"},
		{head + "networks: {a: 1}\n", "line 3: a mapping where a list of network (a mapping such as {name: net1}) is wanted"},
		{head + "expect: {fixed: {violations: orphan}}\n", `line 3: the string "orphan" where a list (such as [a, b]) is wanted`},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			_, err := ParseScenario([]byte(c.yaml), "s.yaml")
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotRegexp(t, `harness\.|time\.Duration|\[\]string|!!`, err.Error())
		})
	}
	// two errors in one file: both, on one line each's number
	_, err := ParseScenario([]byte("name: x\nhosts: h1\nbogus: 1\n"), "s.yaml")
	require.EqualError(t, err, `s.yaml: line 2: the string "h1" where a list (such as [a, b]) is wanted; line 3: unknown field "bogus" in a scenario (docs/scenario-format.md lists the fields)`)
}
