package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The text report of repro is a golden file per scenario and profile (testdata/report/NAME.PROFILE.txt,
// its exit status on the first line): a change to what a run does, finds or prints shows here as a
// diff to read (go test ./cmd/csconform -run TestReportGolden -update rewrites them). The seed
// scenarios under both profiles, and the scenarios of the families found since.
func TestReportGolden(t *testing.T) {
	for _, c := range []struct{ scenario, profile string }{
		{"seed-000-boot-group", "cloudstack-4.22"},
		{"seed-000-boot-group", "fixed"},
		{"seed-001-stale-power-report", "cloudstack-4.22"},
		{"seed-001-stale-power-report", "fixed"},
		{"seed-004-forced-destroy", "cloudstack-4.22"},
		{"seed-004-forced-destroy", "fixed"},
		{"destroy-vs-late-power-on", "cloudstack-4.22"},
		{"heartbeat-fail-starting-vm", "cloudstack-4.22"},
		{"peer-gc-races-implement", "cloudstack-4.22"},
		{"peer-leaves-mid-start", "cloudstack-4.22"},
		{"peer-leaves-mid-start", "fixed"},
		{"stop-overtakes-held-start", "cloudstack-4.22"},
		{"stop-overtakes-held-start", "fixed"},
	} {
		t.Run(c.scenario+"/"+c.profile, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run([]string{"repro", c.scenario, "--profile", c.profile}, &out, &errb)
			require.Contains(t, []int{exitOK, exitFound}, code, errb.String())
			got := fmt.Sprintf("exit %d\n%s", code, out.String())
			golden := filepath.Join("testdata", "report", c.scenario+"."+c.profile+".txt")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "no golden file: go test ./cmd/csconform -run TestReportGolden -update")
			assert.Equal(t, string(want), got)
		})
	}
}
