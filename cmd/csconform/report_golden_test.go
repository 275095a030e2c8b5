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

// TestExploreReportGolden: explore's --report of a D1 finding is a golden file
// (testdata/report/explore-D1.md): a change to what the bug report says shows here as a diff to read
// (-update rewrites it). The same seed gives the same bytes: the report holds no wall time. The run
// names its defect on stdout too.
func TestExploreReportGolden(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "d1.md")
	args := []string{"explore", "--defects", "D1", "--budget", "20", "--seed", "5", "--quiet", "--report", report}
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	require.Equal(t, exitFound, code, out.String()+errb.String())
	assert.Contains(t, out.String(), "\nthis is D1 (the orphaned-network cleanup shuts down a network a start is implementing; CloudStack issue #14522, PR #12409)\n")
	assert.Contains(t, out.String(), "bug report in "+report)
	got, err := os.ReadFile(report)
	require.NoError(t, err)
	golden := filepath.Join("testdata", "report", "explore-D1.md")
	if *update {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "no golden file: go test ./cmd/csconform -run TestExploreReportGolden -update")
	assert.Equal(t, string(want), string(got))
	for _, s := range []string{"## Which defect", "[apache/cloudstack#14522](https://github.com/apache/cloudstack/issues/14522)", "## Settings", "`job.expire.minutes`",
		"## Steps: API calls and host faults", "1. `deployVirtualMachine` name=vm1", "## What broke", "invariant **network-lock**",
		"INFO Found orphaned network 1 in Implementing state", "## management-server.log", "INFO  [o.a.c.e.o.NetworkOrchestrator] (AsyncJobMgr-Heartbeat-2:",
		"## Replay", "csconform explore --defects D1 --scheduler pct:8 --seed 5 --budget 1"} {
		assert.Contains(t, string(got), s)
	}
	// a second run into the same file is refused; a run that finds nothing writes none
	runCLICases(t, []cliCase{
		{args, 2, "--report " + report + " exists"},
		{[]string{"explore", "--profile", "fixed", "--budget", "5", "--seed", "5", "--quiet", "--report", filepath.Join(dir, "none.md")}, 0, "no finding: no report written"},
	})
	if _, err := os.Stat(filepath.Join(dir, "none.md")); err == nil {
		t.Error("a run that found nothing wrote a report")
	}
}
