package main

// The scale bench (csconform bench --scale) and the scale scenario generator (csconform scenarios
// scale): figures, never assertions. Their flags, sizes and table; the runs and the generated cloud
// are harness/scalebench's (One, Child, Scenario).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/csconform/csconform/harness/scalebench"
)

// scaleFlags are the generator's flags, shared by bench --scale and scenarios scale.
type scaleFlags struct {
	vmsPerHost, vmsPerNetwork *int
	duration                  *time.Duration
}

func addScaleFlags(fs *pflag.FlagSet) scaleFlags {
	return scaleFlags{
		vmsPerHost:    fs.Int("vms-per-host", 20, "`N` VMs on each host of a generated scale cloud"),
		vmsPerNetwork: fs.Int("vms-per-network", 25, "`N` VMs on each network of a generated scale cloud"),
		duration:      fs.Duration("duration", 24*time.Hour, "the simulated time `D` a generated scale cloud runs, its deploys included"),
	}
}

func (f scaleFlags) options(hosts int) scalebench.Options {
	return scalebench.Options{Hosts: hosts, VMsPerHost: *f.vmsPerHost, VMsPerNetwork: *f.vmsPerNetwork, Duration: *f.duration}
}

// scaleScenarioCmd prints a generated scale scenario's file: a start for a user's own cloud.
func scaleScenarioCmd(hosts int, sf scaleFlags, stdout, stderr io.Writer) int {
	sc, err := scalebench.Scenario(sf.options(hosts))
	if err != nil {
		fmt.Fprintln(stderr, "csconform scenarios:", err)
		return exitBadInput
	}
	out, err := yaml.Marshal(sc)
	if err != nil {
		fmt.Fprintln(stderr, "csconform scenarios:", err)
		return exitBadInput
	}
	stdout.Write(out)
	return exitOK
}

// scaleProfiles names the profiles a scale run writes ("": none).
type scaleProfiles struct{ cpu, mem string }

// of is the profiles of the run of n hosts: each size its own files.
func (p scaleProfiles) of(n int) []string {
	var args []string
	if p.cpu != "" {
		args = append(args, "--cpuprofile", fmt.Sprintf("%s.%d", p.cpu, n))
	}
	if p.mem != "" {
		args = append(args, "--memprofile", fmt.Sprintf("%s.%d", p.mem, n))
	}
	return args
}

// runScaleOne runs one size in this process and prints its scalebench.Run as JSON.
func runScaleOne(hosts int, sf scaleFlags, profile string, prof scaleProfiles, stdout, stderr io.Writer) int {
	// The simulator runs one task at a time, so one P measures the simulator alone. (When tasks were
	// goroutines handed control over channels, a second P moved each hand-off to another thread: 24 h
	// of 200 hosts took 1.4-1.6x the wall time. As coroutines, two Ps take 0.94x, the collector's share
	// moving to the other core, at the same CPU time.) GOMAXPROCS set in the environment wins.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	sc, err := scalebench.Scenario(sf.options(hosts))
	if err != nil {
		fmt.Fprintln(stderr, "csconform bench:", err)
		return exitBadInput
	}
	if prof.cpu != "" {
		f, err := os.Create(prof.cpu)
		if err != nil {
			fmt.Fprintln(stderr, "csconform bench:", err)
			return exitBadInput
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "csconform bench:", err)
			return exitBadInput
		}
		defer pprof.StopCPUProfile()
	}
	r, err := scalebench.One(sc, sf.options(hosts), profile)
	if err != nil {
		fmt.Fprintln(stderr, "csconform bench:", err)
		return exitBadInput
	}
	if prof.mem != "" {
		if err := writeAllocs(prof.mem); err != nil {
			fmt.Fprintln(stderr, "csconform bench:", err)
			return exitBadInput
		}
	}
	json.NewEncoder(stdout).Encode(r)
	return exitOK
}

// writeAllocs writes the allocation profile so far to path.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// benchScale runs each size in a child process and prints wall and CPU time, steps/s, the simulated:real
// ratio, peak RSS and the growth factor from the size before.
func benchScale(sizes string, runs int, sf scaleFlags, profile string, prof scaleProfiles, stdout, stderr io.Writer) int {
	if runs < 1 || runs > 25 {
		fmt.Fprintf(stderr, "csconform bench: --scale-runs wants 1 to 25, got %d\n", runs)
		return exitBadInput
	}
	var hosts []int
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "csconform bench: --scale wants host counts like 10,50,100, got %q\n", sizes)
			return exitBadInput
		}
		hosts = append(hosts, n)
	}
	for _, n := range hosts { // bad sizes fail before anything runs
		if _, err := scalebench.Scenario(sf.options(n)); err != nil {
			fmt.Fprintln(stderr, "csconform bench:", err)
			return exitBadInput
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "csconform bench:", err)
		return exitBadInput
	}
	fmt.Fprintf(stdout, "scale: N hosts x %d VMs, %d VMs a network, %s simulated, profile %s, one process per run (GOMAXPROCS=1 unless set), the median of %d run(s) per size\n", *sf.vmsPerHost, *sf.vmsPerNetwork, *sf.duration, profile, runs)
	fmt.Fprintln(stdout, "growth: wall time, CPU time and scheduler steps over the size before's, against the hosts' ratio (linear: the same; wall above steps is a dearer step); runs go in rounds of every size, and a time's growth is the median of the rounds' ratios")
	fmt.Fprintf(stdout, "%6s %6s %9s %9s %10s %10s %11s %9s %28s %10s\n", "hosts", "VMs", "wall", "cpu", "steps", "steps/s", "sim:real", "peak RSS", "growth wall/cpu/steps/hosts", "violations")
	// Runs go in rounds, each size once a round: a slow spell of a shared machine then falls on every
	// size instead of on one size's runs, and the growth is the median of each round's ratio (runs
	// minutes apart are not compared). The table's rows print as the last round completes them.
	all := make([][]scalebench.Run, len(hosts))
	args := make([][]string, len(hosts)) // each size's child, the same every round
	for i, n := range hosts {
		args[i] = append([]string{"bench", "--scale-run", strconv.Itoa(n), "--profile", profile,
			"--vms-per-host", strconv.Itoa(*sf.vmsPerHost), "--vms-per-network", strconv.Itoa(*sf.vmsPerNetwork), "--duration", sf.duration.String()},
			prof.of(n)...)
	}
	// SIGINT or SIGTERM (CI's timeout signals the parent alone) goes on to the running child, which
	// the parent reaps before it exits 130: no child runs on, reparented, after its bench.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	for round := range runs {
		for i, n := range hosts {
			r, err := scalebench.Child(self, args[i], sigs, stderr)
			var intr *scalebench.Interrupted
			if errors.As(err, &intr) {
				fmt.Fprintf(stderr, "csconform bench: interrupted (%v) in round %d of %d, during the run of %d hosts: its child stopped and reaped\n", intr.Sig, round+1, runs, n)
				return exitInterrupted
			}
			if err != nil {
				fmt.Fprintf(stderr, "csconform bench: the run of %d hosts %v\n", n, err)
				return exitBadInput
			}
			all[i] = append(all[i], r)
			if round < runs-1 {
				fmt.Fprintf(stderr, "scale: round %d of %d: %d hosts in %.2fs\n", round+1, runs, n, r.Wall.Seconds())
				continue
			}
			m := scalebench.Median(all[i])
			growth := "-"
			if i > 0 {
				prev := all[i-1]
				growth = fmt.Sprintf("%.2fx/%.2fx/%.2fx/%.2fx", scalebench.MedianRatio(all[i], prev, func(x scalebench.Run) time.Duration { return x.Wall }),
					scalebench.MedianRatio(all[i], prev, func(x scalebench.Run) time.Duration { return x.CPU }),
					float64(m.Steps)/float64(prev[0].Steps), float64(m.Hosts)/float64(prev[0].Hosts))
			}
			fmt.Fprintf(stdout, "%6d %6d %8.2fs %8.2fs %10d %10.0f %9.0f:1 %6.0f MB %28s %10d\n", m.Hosts, m.VMs, m.Wall.Seconds(), m.CPU.Seconds(),
				m.Steps, float64(m.Steps)/m.Wall.Seconds(), m.Simulated.Seconds()/m.Wall.Seconds(), float64(m.MaxRSS)/1024, growth, m.Violations)
		}
	}
	return exitOK
}
