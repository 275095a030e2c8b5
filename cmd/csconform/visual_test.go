package main

import (
	"bytes"
	"encoding/json"
	"html"
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

// A history comes from a bug report or someone's log: text from it that reaches the page's
// innerHTML (an operation's metadata, a state's description, shown in the tooltip) must arrive
// escaped, or opening check --out's page runs the history's markup (stored XSS). Text the page sets
// as textContent (the operations' labels) stays as written.
func TestVisualizationEscapesHistoryText(t *testing.T) {
	const payload = "<img src=x onerror=alert(1)>"
	dir := t.TempDir()
	hist := filepath.Join(dir, "h.jsonl")
	out := filepath.Join(dir, "out")
	// an address held by a "VM" named by the payload, freed, then seen in use: not linearizable
	lines := []string{
		`{"seq":1,"time":"2026-10-29T00:00:01Z","actor":"Work-Job-Executor-1","kind":"ip","object":"ip:10.1.1.10","from":"free","to":"vm:P"}`,
		`{"seq":2,"time":"2026-10-29T00:00:02Z","actor":"observer","kind":"observe","object":"ip:10.1.1.10","to":"vm:P","detail":"pool says P"}`,
		`{"seq":3,"time":"2026-10-29T00:00:03Z","actor":"Work-Job-Executor-2","kind":"ip","object":"ip:10.1.1.10","from":"vm:P","to":"free"}`,
		`{"seq":4,"time":"2026-10-29T00:00:04Z","actor":"observer","kind":"observe","object":"ip:10.1.1.10","to":"vm:P","detail":"pool says free P"}`,
	}
	js, _ := json.Marshal(payload)
	text := strings.ReplaceAll(strings.Join(lines, "\n")+"\n", "P", strings.Trim(string(js), `"`))
	require.NoError(t, os.WriteFile(hist, []byte(text), 0o644))
	var o, e bytes.Buffer
	require.Equal(t, exitFound, run([]string{"check", hist, "--out", out}, &o, &e), e.String())
	page := filepath.Join(out, "partition-ip-10.1.1.10.html")
	b, err := os.ReadFile(page)
	require.NoError(t, err)

	// the data porcupine embeds: what goes to innerHTML is escaped, labels are not
	m := regexp.MustCompile(`(?m)^\s*const data = (.*)$`).FindSubmatch(b)
	require.NotNil(t, m, "no data in the page")
	var data struct {
		Partitions []struct {
			History []struct{ Description, Metadata string }
			// PartialLinearizations: [][]{Index, StateDescription}
			PartialLinearizations [][]struct{ StateDescription string }
		}
	}
	require.NoError(t, json.Unmarshal(m[1], &data))
	var markup, labels []string
	for _, p := range data.Partitions {
		for _, h := range p.History {
			markup = append(markup, h.Metadata)
			labels = append(labels, h.Description)
		}
		for _, lin := range p.PartialLinearizations {
			for _, el := range lin {
				markup = append(markup, el.StateDescription)
			}
		}
	}
	escaped := html.EscapeString(payload)
	for _, s := range markup {
		assert.NotContains(t, s, "<", "history text reaches innerHTML unescaped")
	}
	assert.Contains(t, strings.Join(markup, "\n"), escaped, "the payload never reached the tooltip's text: the test proves nothing")
	assert.Contains(t, strings.Join(labels, "\n"), payload, "a label (textContent) is shown as written, not escaped twice")

	node, nodeErr := exec.LookPath("node")
	if nodeErr != nil {
		t.Log("no node: the tooltips themselves not checked")
		return
	}
	// the page's own script, hovered over every operation: what it put into innerHTML
	shown, err := exec.Command(node, "testdata/js/render.js", page, "--tooltips").Output()
	require.NoError(t, err)
	var tips []string
	require.NoError(t, json.Unmarshal(shown, &tips), string(shown))
	require.NotEmpty(t, tips)
	for _, tip := range tips {
		assert.NotContains(t, tip, "<img", "a tooltip runs the history's markup")
	}
	assert.Contains(t, strings.Join(tips, "\n"), escaped)
}
