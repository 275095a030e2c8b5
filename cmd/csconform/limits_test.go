package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/csconform/csconform/internal/tier"
)

// scenarioFile writes a one-VM scenario with the given hosts, config, extra steps and settle.
func scenarioFile(t *testing.T, hosts int, config, steps, settle string) string {
	t.Helper()
	var hs []string
	for i := 1; i <= hosts; i++ {
		hs = append(hs, fmt.Sprintf("h%d", i))
	}
	y := fmt.Sprintf("name: careless\nhosts: [%s]\nnetworks: [{name: n1}]\n", strings.Join(hs, ", "))
	if config != "" {
		y += "config: {" + config + "}\n"
	}
	y += "steps:\n  - {op: deploy, vm: v1, networks: [n1], host: h1}\n" + steps
	if settle != "" {
		y += "settle: " + settle + "\n"
	}
	f := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(f, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// What a careless or hostile scenario did before: loop for ever on a zero interval, run for hours on a
// huge settle or an unbounded number of steps, grow to gigabytes on /dev/zero. Each is refused or
// stopped with a line that says which bound and how to change it.
func TestReproRefusesRunawayScenarios(t *testing.T) {
	var manySteps strings.Builder
	for i := 0; i < 300; i++ {
		manySteps.WriteString("  - {op: stop, vm: v1}\n  - {op: start, vm: v1}\n")
	}
	cases := []cliCase{
		{[]string{"repro", "/dev/zero"}, 2, "larger than 4 MiB"},
		{[]string{"repro", scenarioFile(t, 1, `ping.interval: "0"`, "", "")}, 2, "ping.interval accepts 1..86400"},
		{[]string{"repro", scenarioFile(t, 1, `ping.interval: "-5"`, "", "")}, 2, "out of range"},
		{[]string{"repro", scenarioFile(t, 1, `network.gc.interval: "NaN"`, "", "")}, 2, "network.gc.interval accepts"},
		{[]string{"repro", scenarioFile(t, 1, `vm.job.check.interval: "1e300"`, "", "")}, 2, "vm.job.check.interval accepts"},
		{[]string{"repro", scenarioFile(t, 1, "", "  - {op: setConfig, key: ping.interval, value: \"0\"}\n", "")}, 2, "ping.interval accepts"},
		{[]string{"repro", scenarioFile(t, 1, "", "", "1000000h")}, exitStopped, "would pass the run's bound of 48h0m0s of simulated time (--max-sim-time)"},
		{[]string{"repro", scenarioFile(t, 1, "", manySteps.String(), ""), "--max-steps", "3000"}, exitStopped, "bound of 3000 scheduler steps (--max-steps 3000)"},
		{[]string{"repro", scenarioFile(t, 1, "", "", "30h"), "--max-sim-time", "10h"}, exitStopped, "bound of 10h0m0s of simulated time"},
		{[]string{"repro", scenarioFile(t, 100_000, "", "", "")}, 2, "lists 100000 hosts: at most 2000"},
		{[]string{"repro", scenarioFile(t, 1, "", "", "-5h")}, 2, "settle -5h0m0s is negative"},
		{[]string{"repro", scenarioFile(t, 1, "", "  - {wait: -1m, op: stop, vm: v1}\n", "")}, 2, "wait -1m0s is negative"},
		// a bound of 0 would silently be the default: refused
		{[]string{"repro", "seed-004-forced-destroy", "--max-steps", "0"}, exitBadInput, "--max-steps must be at least 1"},
		{[]string{"repro", "seed-004-forced-destroy", "--max-sim-time", "0s"}, exitBadInput, "--max-sim-time must be above 0"},
		{[]string{"scenarios", "scale", "--hosts", "2001"}, 2, "hosts must be 1 to 2000"},
		{[]string{"scenarios", "scale", "--hosts", "2000", "--vms-per-host", "30"}, 2, "60000 VMs: at most 50000"},
	}
	runCLICases(t, cases)

	// a run stopped at its bound prints what it had: the table so far
	var out, errb bytes.Buffer
	if code := run([]string{"repro", scenarioFile(t, 1, "", manySteps.String(), ""), "--max-steps", "3000", "--profile", "fixed"}, &out, &errb); code != exitStopped || !strings.Contains(out.String(), "v1") {
		t.Fatalf("exit %d, want 5 with the table so far:\n%s%s", code, out.String(), errb.String())
	}
}

// Ctrl-C stops a simulated run between two scheduler steps: it prints what it had and exits 130.
// Before, SIGINT was caught and never looked at, and a run kept going for half an hour.
func TestReproStopsOnInterrupt(t *testing.T) {
	tier.Need(t, tier.Long) // builds the binary
	t.Parallel()            // beside the package's real-time tests, which mostly wait
	bin := buildCSConform(t)
	// 300 hosts for 47 h of simulated time: millions of steps, many seconds on any machine
	f := scenarioFile(t, 300, "", "", "47h")
	cmd := exec.Command(bin, "repro", f, "--profile", "fixed")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // a hang guard, not a measure of speed
		_ = cmd.Process.Kill()
		t.Fatalf("still running 2 minutes after SIGINT:\n%s%s", out.String(), errb.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("exit %d, want %d and a word that it was interrupted:\n%s%s", code, exitInterrupted, out.String(), errb.String())
	}
}
