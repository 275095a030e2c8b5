package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/internal/schema"
)

// Every JSON document the commands print or write opens with the same header, and names things
// under lowercase keys: before, repro's violations said "Invariant" and explore's "invariant".
func TestJSONDocumentsShareOneSchema(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "h.jsonl")
	race := writeFile(t, dir, "race.log", []byte(lcRace))
	explored := filepath.Join(dir, "explore")
	doc := func(args ...string) []byte {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		require.Contains(t, []int{exitOK, exitFound}, code, "%v: %s", args, errb.String())
		return out.Bytes()
	}
	repro := doc("repro", "seed-004-forced-destroy", "--json", "--history", hist)
	explore := func() []byte {
		doc("explore", "--profile", "cloudstack-4.22", "--seed", "1", "--budget", "100", "--quiet", "--out", explored) // finds D1 at once
		b, err := os.ReadFile(filepath.Join(explored, "result.json"))
		require.NoError(t, err)
		return b
	}()
	for _, c := range []struct {
		command string
		doc     []byte
	}{
		{"repro", repro},
		{"check", doc("check", hist, "--json")},
		{"logcheck", doc("logcheck", race, "--json")},
		{"explore", explore},
	} {
		t.Run(c.command, func(t *testing.T) {
			var h schema.Header
			require.NoError(t, json.Unmarshal(c.doc, &h))
			require.Equal(t, schema.New(c.command), h)
			require.NotRegexp(t, regexp.MustCompile(`"[A-Z]\w*":`), string(c.doc), "a capitalized key")
			require.Contains(t, string(c.doc), `"invariant": "`, "a violation named under invariant")
		})
	}
}
