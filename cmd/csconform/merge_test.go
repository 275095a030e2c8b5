package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/harness/explore"
)

// explore merge joins the shards of one run, as a CI matrix leaves them, into one summary and JUnit
// file; shards of different runs, a shard twice or one missing are refused.
func TestExploreMerge(t *testing.T) {
	dir := t.TempDir()
	shard := func(name string, args ...string) string {
		out := filepath.Join(dir, name)
		var o, e bytes.Buffer
		code := run(append([]string{"explore", "--quiet", "--out", out}, args...), &o, &e)
		require.Contains(t, []int{exitOK, exitFound}, code, e.String())
		return out
	}
	a0 := shard("a0", "--profile", "fixed", "--seed", "3", "--budget", "20", "--shard", "0/2")
	a1 := shard("a1", "--profile", "fixed", "--seed", "3", "--budget", "20", "--shard", "1/2")
	other := shard("other", "--profile", "fixed", "--seed", "4", "--budget", "20", "--shard", "1/2")
	b0 := shard("b0", "--profile", "cloudstack-4.22", "--seed", "1", "--budget", "20", "--shard", "0/2") // finds D1 at once
	b1 := shard("b1", "--profile", "cloudstack-4.22", "--seed", "1", "--budget", "20", "--shard", "1/2")
	// an interrupted shard: its result.json says so
	c1 := filepath.Join(dir, "c1")
	require.NoError(t, os.CopyFS(c1, os.DirFS(a1)))
	res, err := os.ReadFile(filepath.Join(c1, "result.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(c1, "result.json"), bytes.Replace(res, []byte(`"found": false`), []byte(`"found": false, "interrupted": true`), 1), 0o644))

	merged := filepath.Join(dir, "merged")
	runCLICases(t, []cliCase{
		{[]string{"explore", "merge", a0, a1, "--out", merged}, exitOK, "40 of 40 cases"},
		{[]string{"explore", "merge", a1, a0}, exitOK, "found nothing"},
		{[]string{"explore", "merge", b1, b0}, exitFound, "replay: csconform explore --profile cloudstack-4.22"},
		{[]string{"explore", "merge", a0}, exitBadInput, "shard(s) 1/2 missing"},
		{[]string{"explore", "merge", a0, a0}, exitBadInput, "are both shard 0/2"},
		{[]string{"explore", "merge", a0, other}, exitBadInput, "not a shard of the same run"},
		{[]string{"explore", "merge", a0, b1}, exitBadInput, "not a shard of the same run"},
		{[]string{"explore", "merge", a0, c1}, exitBadInput, "interrupted before their budget: no verdict"},
		{[]string{"explore", "merge", a0, filepath.Join(dir, "nope")}, exitBadInput, "not an explore --out directory"},
		{[]string{"explore", "merge"}, exitBadInput, "name the shards' --out directories"},
		{[]string{"explore", "merge", a0, a1, "--out", merged}, exitBadInput, "is not empty"},
	})

	// the merged files: one JUnit of both shards' suites, one versioned result.json
	x, err := os.ReadFile(filepath.Join(merged, "junit.xml"))
	require.NoError(t, err)
	var suites struct {
		Tests  int `xml:"tests,attr"`
		Suites []struct {
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(x, &suites))
	assert.Equal(t, 4, suites.Tests)
	require.Len(t, suites.Suites, 2)
	assert.Equal(t, "invariants/fixed/shard-1/2", suites.Suites[1].Cases[0].Name)
	j, err := os.ReadFile(filepath.Join(merged, "result.json"))
	require.NoError(t, err)
	var m struct {
		SchemaVersion int
		Command       string
		Shards, Cases int
		Found         bool
	}
	require.NoError(t, json.Unmarshal(j, &m))
	assert.Equal(t, 1, m.SchemaVersion)
	assert.Equal(t, "explore merge", m.Command)
	assert.Equal(t, 2, m.Shards)
	assert.Equal(t, 40, m.Cases)
	s, err := os.ReadFile(filepath.Join(merged, "summary.txt"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(s), "merged 2 shard(s) of seed 3 under fixed"), string(s))
}

// The example workflow is valid YAML, its matrix has a job for each of its shards, each shard's
// budget is whole chunks, and every csconform command line in it is one this csconform accepts.
func TestShardWorkflowExample(t *testing.T) {
	b, err := os.ReadFile("../../docs/examples/explore-shards.yml")
	require.NoError(t, err)
	var wf struct {
		Env  map[string]string
		Jobs map[string]struct {
			Strategy struct{ Matrix struct{ Shard []int } }
			Steps    []struct{ Run string }
		}
	}
	require.NoError(t, yaml.Unmarshal(b, &wf))
	shards, err := strconv.Atoi(wf.Env["SHARDS"])
	require.NoError(t, err)
	assert.Len(t, wf.Jobs["shard"].Strategy.Matrix.Shard, shards, "a matrix job per shard")
	budget, err := strconv.Atoi(wf.Env["BUDGET"])
	require.NoError(t, err)
	assert.Zero(t, budget%explore.ChunkCases, "a shard's budget is whole chunks, so the shards add up to the unsharded run")
	vars := strings.NewReplacer(`"`, "", "${{ matrix.shard }}", "1", "$SHARDS", wf.Env["SHARDS"], "$SEED", "1", "$BUDGET", wf.Env["BUDGET"])
	var commands []string
	for _, job := range []string{"shard", "merge"} {
		for _, st := range wf.Jobs[job].Steps {
			if line, ok := strings.CutPrefix(st.Run, "./csconform "); ok {
				commands = append(commands, vars.Replace(line))
			}
		}
	}
	require.Len(t, commands, 2)
	for _, line := range commands {
		args := strings.Fields(line)
		var o, e bytes.Buffer
		root := rootCmd(&cliEnv{stdout: &o, stderr: &e, code: new(int)})
		c, rest, err := root.Find(args)
		require.NoError(t, err, line)
		require.NoError(t, c.ParseFlags(rest), line)
		if c.Name() == "explore" {
			i, n, err := parseShard(c.Flags().Lookup("shard").Value.String())
			require.NoError(t, err, line)
			assert.Equal(t, [2]int{1, shards}, [2]int{i, n})
		} else {
			assert.Equal(t, "merge", c.Name(), line)
		}
	}
}
