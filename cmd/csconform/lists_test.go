package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/conformance"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/impl"
)

// The list commands: --json that parses into what the text lists, scenarios show printing a file
// that parses back into the same scenario, and anything else refused with exit 2 (before, scenarios
// --bogus and profiles extra exited 0).
func TestListCommands(t *testing.T) {
	runCLICases(t, []cliCase{
		{[]string{"scenarios", "--bogus"}, exitBadInput, "unknown flag: --bogus"},
		{[]string{"profiles", "extra"}, exitBadInput, "unexpected"},
		{[]string{"faults", "x"}, exitBadInput, "unexpected"},
		{[]string{"config", "--yaml"}, exitBadInput, "unknown flag: --yaml"},
		{[]string{"scenarios", "show", "nope"}, exitBadInput, "unknown scenario"},
	})
	all, err := conformance.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cmd  string
		want int
	}{{"scenarios", len(all)}, {"config", len(impl.ConfigKeys)}, {"faults", 0}} {
		var out, errb bytes.Buffer
		if code := run([]string{c.cmd, "--json"}, &out, &errb); code != exitOK {
			t.Fatalf("%s --json: exit %d %s", c.cmd, code, errb.String())
		}
		var rows []map[string]any
		if err := json.Unmarshal(out.Bytes(), &rows); err != nil || len(rows) == 0 || (c.want > 0 && len(rows) != c.want) || rows[0]["name"] == nil {
			t.Fatalf("%s --json: %v, %d rows: %s", c.cmd, err, len(rows), out.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"profiles", "--json"}, &out, &errb); code != exitOK {
		t.Fatalf("profiles --json: exit %d", code)
	}
	var p struct {
		Profiles []struct{ Name string } `json:"profiles"`
		Defects  []struct{ Name string } `json:"defects"`
	}
	if err := json.Unmarshal(out.Bytes(), &p); err != nil || len(p.Profiles) != len(impl.ProfileNames()) || len(p.Defects) != len(impl.Defects) {
		t.Fatalf("profiles --json: %v %s", err, out.String())
	}
	for _, sc := range all {
		out.Reset()
		if code := run([]string{"scenarios", "show", sc.Name}, &out, &errb); code != exitOK {
			t.Fatalf("scenarios show %s: exit %d", sc.Name, code)
		}
		back, err := harness.ParseScenario(out.Bytes(), sc.Name)
		if err != nil || back.Name != sc.Name || len(back.Steps) != len(sc.Steps) {
			t.Fatalf("scenarios show %s does not parse back: %v", sc.Name, err)
		}
	}
}

// csconform config is a table: a header, every column starting where its header does whatever the
// key's length, and the ranges' numbers written in full. Before, a long key pushed its row out of
// line and 86400000 read 8.64e+07.
func TestConfigTableAligned(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, exitOK, run([]string{"config"}, &out, &errb), errb.String())
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	require.Len(t, lines, len(impl.ConfigKeys)+1)
	header := []rune(lines[0])
	var starts []int // where each header word starts
	for i, r := range header {
		if r != ' ' && (i == 0 || header[i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	require.Len(t, starts, 5, lines[0])
	for _, l := range lines[1:] {
		row := []rune(l)
		for _, at := range starts[1:] {
			// a column starts after a gap of at least two spaces: the cell before it ended there
			require.Greater(t, len(row), at, l)
			assert.Equal(t, "  ", string(row[at-2:at]), "a column does not start at %d: %q", at, l)
		}
	}
	assert.NotContains(t, out.String(), "e+0")
	assert.Contains(t, out.String(), "10..86400000 (whole)")
}
