// Package scalebench is the scale bench's mechanism (csconform bench --scale): the generated scale
// cloud (Scenario, also csconform scenarios scale), one size's run of it (One), each size in a child process of its own so that its peak RSS is its
// own (Child), and the medians the table prints (Median, MedianRatio). Figures, never assertions;
// the command keeps the flags, the sizes and the table.
package scalebench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/csconform/csconform/harness"
)

// Run is what one size's run reports to the bench (a child process, so that its peak RSS is its own).
type Run struct {
	Hosts      int           `json:"hosts"`
	VMs        int           `json:"vms"`
	Wall       time.Duration `json:"wall"`
	Simulated  time.Duration `json:"simulated"`
	Steps      uint64        `json:"steps"`
	Violations int           `json:"violations"`
	Mismatches int           `json:"mismatches"`
	CPU        time.Duration `json:"-"`
	MaxRSS     int64         `json:"-"` // KiB
}

// One runs sc, the scale cloud generated from o, on the simulator under profile, in this process.
func One(sc *harness.Scenario, o Options, profile string) (Run, error) {
	t0 := time.Now()
	// The deploys' own minutes come on top of the settle that fills the duration: a run of 48 h, the
	// default bound and the longest the generator takes, would stop at it. The bound guards runaway
	// runs; this one's end is known.
	lim := harness.Limits{MaxSimTime: harness.DefaultMaxSimTime + time.Hour}
	res, err := harness.Run(harness.Simulator, sc, harness.RunOptions{Profile: profile, Seed: sc.Seed, Limits: lim})
	if err != nil {
		return Run{}, err
	}
	return Run{Hosts: o.Hosts, VMs: o.Hosts * o.VMsPerHost, Wall: time.Since(t0), Simulated: res.VirtualEnd, Steps: res.Steps,
		Violations: len(res.Violations), Mismatches: len(res.Mismatches)}, nil
}

// Interrupted: a signal stopped a scale run's child.
type Interrupted struct{ Sig os.Signal }

func (e *Interrupted) Error() string { return "interrupted by " + e.Sig.String() }

// childGrace is how long a signalled child has to exit before it is killed.
const childGrace = 10 * time.Second

// Child runs one size in a child process (self with args, which prints One's Run as a JSON line):
// its Run, with the OS's CPU time and peak RSS. A signal on sigs is sent on to the child, which is
// waited for (killed after childGrace) before Child returns an *Interrupted; so is a child a signal
// killed (Ctrl-C signals the terminal's whole process group).
func Child(self string, args []string, sigs <-chan os.Signal, stderr io.Writer) (Run, error) {
	select {
	case sig := <-sigs: // between two runs: none starts
		return Run{}, &Interrupted{sig}
	default:
	}
	cmd := exec.Command(self, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, stderr
	if err := cmd.Start(); err != nil {
		return Run{}, fmt.Errorf("failed: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case sig := <-sigs:
		_ = cmd.Process.Signal(sig)
		select {
		case <-done:
		case <-time.After(childGrace):
			_ = cmd.Process.Kill()
			<-done
		}
		return Run{}, &Interrupted{sig}
	}
	if err != nil {
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && (ws.Signal() == syscall.SIGINT || ws.Signal() == syscall.SIGTERM) {
			return Run{}, &Interrupted{ws.Signal()}
		}
		return Run{}, fmt.Errorf("failed: %w", err)
	}
	var r Run
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return Run{}, fmt.Errorf("printed %q: %w", out.String(), err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.MaxRSS = ru.Maxrss
	}
	r.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return r, nil
}

// MedianRatio is the median over rounds of f(a[k]) / f(b[k]): the growth between two sizes, each
// round's pair run back to back.
func MedianRatio(a, b []Run, f func(Run) time.Duration) float64 {
	var rs []float64
	for k := range min(len(a), len(b)) {
		rs = append(rs, f(a[k]).Seconds()/f(b[k]).Seconds())
	}
	slices.Sort(rs)
	if n := len(rs); n%2 == 0 {
		return (rs[n/2-1] + rs[n/2]) / 2
	}
	return rs[len(rs)/2]
}

// Median is the runs' median wall and CPU time (each on its own) and their largest peak RSS; the
// rest is the same in every run of a size (the simulator is deterministic).
func Median(runs []Run) Run {
	r := runs[0]
	med := func(f func(Run) time.Duration) time.Duration {
		var d []time.Duration
		for _, x := range runs {
			d = append(d, f(x))
		}
		slices.Sort(d)
		return d[len(d)/2]
	}
	r.Wall = med(func(x Run) time.Duration { return x.Wall })
	r.CPU = med(func(x Run) time.Duration { return x.CPU })
	for _, x := range runs {
		r.MaxRSS = max(r.MaxRSS, x.MaxRSS)
	}
	return r
}
