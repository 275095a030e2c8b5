package main

import "testing"

// --scheduler: a bad value is a clear error (exit 2), and a real-time driver refuses the simulator's
// strategy; a good one runs.
func TestSchedulerFlag(t *testing.T) {
	runCLICases(t, []cliCase{
		{[]string{"repro", "seed-000-ab", "--scheduler", "coyote"}, 2, `unknown scheduler "coyote"`},
		{[]string{"repro", "seed-000-ab", "--scheduler", "pct:0"}, 2, "the depth must be a whole number from 1 to 100"},
		{[]string{"explore", "--scheduler", "pct:x", "--budget", "1"}, 2, "the depth must be"},
		{[]string{"explore", "--scheduler", "pct", "--driver", "container", "--budget", "1"}, 2, "--scheduler is the simulator's"},
		{[]string{"repro", "seed-000-ab", "--scheduler", "pct", "--driver", "libvirt"}, 2, "--scheduler is the simulator's"},
		{[]string{"repro", "seed-000-ab", "--scheduler", "pct:2", "--profile", "fixed", "--seed", "3"}, 0, ""},
	})
}
