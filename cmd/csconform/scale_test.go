package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/internal/tier"
)

func TestScaleCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, run([]string{"scenarios", "scale", "--hosts", "2", "--vms-per-host", "3", "--duration", "1h"}, &out, &errOut), errOut.String())
	sc, err := harness.ParseScenario(out.Bytes(), "generated")
	require.NoError(t, err, "the generated file reads back")
	require.Len(t, sc.Steps, 6)

	for _, args := range [][]string{
		{"scenarios", "scale", "--hosts", "0"},
		{"scenarios", "scale", "extra"},
		{"bench", "--scale", "10,x"},
		{"bench", "--scale", "10", "--vms-per-network", "99"},
		{"bench", "extra"},
	} {
		out.Reset()
		errOut.Reset()
		require.Equal(t, exitBadInput, run(args, &out, &errOut), "%v", args)
		require.NotEmpty(t, errOut.String(), "%v", args)
	}
}

// TestScaleRunWritesProfiles: one size's run writes the CPU and allocation profiles it is given, and
// says so when it cannot.
func TestScaleRunWritesProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu"), filepath.Join(dir, "mem")
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, run([]string{"bench", "--scale-run", "2", "--vms-per-host", "2", "--duration", "10m", "--cpuprofile", cpu, "--memprofile", mem}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), `"hosts":2`)
	for _, f := range []string{cpu, mem} {
		st, err := os.Stat(f)
		require.NoError(t, err)
		require.NotZero(t, st.Size(), f)
	}
	errOut.Reset()
	require.Equal(t, exitBadInput, run([]string{"bench", "--scale-run", "2", "--vms-per-host", "2", "--duration", "10m", "--memprofile", filepath.Join(dir, "no", "such")}, &out, &errOut))
	require.Contains(t, errOut.String(), "no such file")
}

// TestScaleRunOfTheLongestDuration: a cloud run for the longest duration the generator takes, 48 h,
// finishes: its deploys' minutes on top of that once passed the run's default bound.
func TestScaleRunOfTheLongestDuration(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, run([]string{"bench", "--scale-run", "2", "--vms-per-host", "2", "--duration", "48h"}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), `"hosts":2`)
}

// TestBenchScaleReapsItsChildOnSignal: SIGTERM to bench --scale (what CI's timeout sends, to the
// parent alone) reaches the --scale-run child too, and the parent reaps it before it exits 130.
// Before, the parent died and the child ran on, reparented, to the end of its simulated days.
func TestBenchScaleReapsItsChildOnSignal(t *testing.T) {
	tier.Need(t, tier.Long) // builds the binary
	t.Parallel()            // beside the package's real-time tests, which mostly wait
	bin := buildCSConform(t)
	// 100 hosts for 47 h of simulated time: many seconds of the child's on any machine
	cmd := exec.Command(bin, "bench", "--scale", "100", "--duration", "47h")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// its own process group: the signal goes to the parent alone, as a timeout's does
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	child := 0
	for guard := time.After(2 * time.Minute); child == 0; { // a hang guard, not a measure of speed
		select {
		case <-done:
			t.Fatalf("bench ended before its child was seen:\n%s%s", out.String(), errb.String())
		case <-guard:
			_ = cmd.Process.Kill()
			t.Fatalf("no --scale-run child after 2 minutes:\n%s%s", out.String(), errb.String())
		case <-time.After(20 * time.Millisecond):
			child = scaleChildOf(bin)
		}
	}
	defer func() { _ = syscall.Kill(child, syscall.SIGKILL) }() // whatever the outcome, no child left behind
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // a hang guard
		_ = cmd.Process.Kill()
		t.Fatalf("bench still running 2 minutes after SIGTERM:\n%s%s", out.String(), errb.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("exit %d, want %d and a word that it was interrupted:\n%s%s", code, exitInterrupted, out.String(), errb.String())
	}
	// reaped by the parent before it exited: no process of that pid runs the child any more
	if cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/cmdline"); err == nil && strings.Contains(string(cmdline), "--scale-run") {
		t.Fatalf("the --scale-run child %d still runs after its parent exited:\n%s", child, errb.String())
	}
}

// scaleChildOf is the pid of a process running bin --scale-run, 0 if none.
func scaleChildOf(bin string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 2 && args[0] == bin && args[2] == "--scale-run" {
			pid, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p, "/proc/"), "/cmdline"))
			return pid
		}
	}
	return 0
}
