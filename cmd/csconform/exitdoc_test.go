package main

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExitStatusSaidTheSameEverywhere: the root help's footer and the README's table list the same
// exit codes, and those are the codes the commands return.
func TestExitStatusSaidTheSameEverywhere(t *testing.T) {
	codes := func(text string, line *regexp.Regexp) []int {
		var out []int
		for _, m := range line.FindAllStringSubmatch(text, -1) {
			n, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	help := codes(exitStatus, regexp.MustCompile(`(?m)^  (\d+) `))
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	section, ok := strings.CutPrefix(string(readme)[strings.Index(string(readme), "## Exit status"):], "## Exit status")
	require.True(t, ok, "README.md has no Exit status section")
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	table := codes(section, regexp.MustCompile(`(?m)^\| (\d+) +\|`))
	want := []int{exitOK, exitFound, exitBadInput, exitUndecided, exitExpectation, exitStopped, exitInterrupted}
	slices.Sort(want)
	require.Equal(t, want, help, "the root help's exit statuses")
	require.Equal(t, want, table, "README.md's exit status table")
}
