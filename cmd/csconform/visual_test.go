package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A failing partition's HTML names its rows by whole thread names, in a margin measured on them
// (porcupine measured its row numbers, and "Work-Job-Executor-4" showed as "cutor-4"), and has a
// time axis: the operations' calls and returns at the run's clock. With node on the machine, the
// page's own script runs on a tiny DOM (testdata/js/render.js) and the drawing is checked.
func TestVisualizationNamesAndTimeAxis(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "h.jsonl")
	out := filepath.Join(dir, "out")
	var o, e bytes.Buffer
	require.Equal(t, exitFound, run([]string{"repro", "seed-004-forced-destroy", "--history", hist}, &o, &e), e.String())
	require.Equal(t, exitFound, run([]string{"check", hist, "--out", out}, &o, &e), e.String())
	pages, err := filepath.Glob(filepath.Join(out, "*.html"))
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	node, nodeErr := exec.LookPath("node")
	clock := regexp.MustCompile(`^\+\d\d:\d\d:\d\d\.\d{3}$`)
	executors := 0
	for _, p := range pages {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		page := string(b)
		assert.True(t, strings.Contains(page, "const tag = i < realClients ? String(["), "%s: the margin is not measured on the names", p)
		assert.True(t, strings.Contains(page, "const CLOCK = {"), "%s: no time axis", p)
		if nodeErr != nil {
			continue
		}
		drawn, err := exec.Command(node, "testdata/js/render.js", p).Output()
		require.NoError(t, err, p)
		var texts [][3]any // x, y, text
		require.NoError(t, json.Unmarshal(drawn, &texts), string(drawn))
		rows, axis := 0, 0
		for _, tx := range texts {
			x, s := tx[0].(float64), tx[2].(string)
			switch {
			case clock.MatchString(s):
				axis++
			case regexp.MustCompile(`^(Work-Job-Executor-\d+|observer|client-\d+|AgentTaskPool-\d+|api|[A-Za-z-]+-\d+)$`).MatchString(s) && x < 400:
				rows++
				// right-aligned at x, the name (7 px a character in the tiny DOM) fits left of it
				assert.GreaterOrEqual(t, x, float64(7*len(s)), "row label %q cut: ends at %v", s, x)
				if regexp.MustCompile(`^Work-Job-Executor-\d+$`).MatchString(s) {
					executors++
				}
			}
		}
		assert.Positive(t, rows, "%s: no row labels in %s", p, drawn)
		assert.Positive(t, axis, "%s: no time labels", p)
	}
	if nodeErr == nil {
		assert.Positive(t, executors, "a whole Work-Job-Executor-N name")
	} else {
		t.Log("no node: the drawing itself not checked")
	}
}
