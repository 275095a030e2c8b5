package explore

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/linear"
)

// Day is a simulated day's figures.
type Day struct {
	Wall  time.Duration
	Steps uint64
}

// SimulateDay runs a 3-host cluster for 24 h of virtual time (GC ticks, heartbeats, pings, network GC).
func SimulateDay() Day {
	t0 := time.Now()
	c, err := harness.NewSimCluster(harness.Options{Seed: 1, Hosts: []string{"h1", "h2", "h3"}, Defects: impl.Switches{}})
	if err != nil {
		panic(err) // a cluster of defaults always comes up
	}
	defer c.Close()
	if err := c.Scheduler().RunFor(24 * time.Hour); err != nil {
		panic(err)
	}
	return Day{Wall: time.Since(t0), Steps: c.Scheduler().Steps()}
}

// LargeHistory is a synthetic history of n porcupine operations (client calls and observations) over
// n/100 VMs: each VM deployed, then stopped and started in turn, observed around each call.
func LargeHistory(n int) []history.Event {
	var es []history.Event
	seq := int64(0)
	add := func(e history.Event) {
		seq++
		e.Seq = seq
		es = append(es, e)
	}
	vms := max(n/100, 1)
	op := 0
	ops := 0
	for round := 0; ops < n; round++ {
		for v := 1; v <= vms; v++ {
			obj := fmt.Sprintf("vm:%d", v)
			on := round%2 == 0
			kind := "start"
			if round == 0 {
				kind = "deploy"
			} else if !on {
				kind = "stop"
			}
			op++
			add(history.Event{Kind: history.Call, Op: op, Actor: fmt.Sprintf("client-%d", v%7), Object: obj, Detail: kind + " x"})
			add(history.Event{Kind: history.Observe, Object: obj, To: linear.ObserveVM(!on, false)})
			add(history.Event{Kind: history.Observe, Object: obj, To: linear.ObserveVM(on, false)})
			add(history.Event{Kind: history.Return, Op: op, Object: obj, To: "ok"})
			ops += 3
			if ops >= n {
				break
			}
		}
	}
	return es
}

// HistorySize is what was checked.
type HistorySize struct{ Ops, Partitions int }

// CheckLargeHistory checks LargeHistory(n) with the VM model.
func CheckLargeHistory(n int) (HistorySize, time.Duration) {
	parts := linear.Partitions(LargeHistory(n))
	size := HistorySize{Partitions: len(parts)}
	for _, p := range parts {
		size.Ops += len(p.Ops)
	}
	t0 := time.Now()
	rs := linear.Check(parts, 0)
	wall := time.Since(t0)
	if len(linear.Illegal(rs)) > 0 {
		panic("the synthetic history is linearizable by construction")
	}
	return size, wall
}

// Throughput is explore's speed with one generator over a budget of cases.
type Throughput struct {
	Cases    int
	Wall     time.Duration
	Coverage *CoverageSummary
}

// CasesPerSecond is the figure csconform bench compares.
func (t Throughput) CasesPerSecond() float64 { return float64(t.Cases) / t.Wall.Seconds() }

// CompareThroughput explores budget cases under the fixed profile with the classic generator and as
// many with the current one, in turns of 100 cases so that a busy machine slows both alike, going on
// from a new seed after a finding (the fixed reference still has races to find). It says how fast
// each went and what each reached.
func CompareThroughput(budget int, seed uint64) (classic, current Throughput, err error) {
	guides := [2]*Guide{NewGuide(), NewGuide()}
	tp := [2]*Throughput{&classic, &current}
	for k := uint64(0); tp[0].Cases < budget || tp[1].Cases < budget; k++ {
		for i, old := range []bool{true, false} {
			t := tp[i]
			if t.Cases >= budget {
				continue
			}
			o := Options{Profile: impl.Fixed, Defects: impl.Switches{}, Classic: old, Guide: guides[i]}
			t0 := time.Now()
			// a failing case is among the ones run, not shrunk
			_, ran, err := Explore(o, min(100, budget-t.Cases), seed+k*7919, -1)
			if err != nil {
				return classic, current, err
			}
			t.Wall += time.Since(t0)
			t.Cases += ran
		}
	}
	classic.Coverage, current.Coverage = guides[0].Coverage.Summary(), guides[1].Coverage.Summary()
	return classic, current, nil
}

// BenchDefects are the defects csconform bench times, each alone (D2 is the family D2a-D2e, as
// impl.ParseDefects reads it): the one list its --defects accepts, its help and its error say.
func BenchDefects() []string {
	return []string{impl.D1.Name(), "D2", impl.D3.Name(), impl.C1.Name(), impl.C2.Name(), impl.PlantedStopTimeoutIsSuccess.Name(), impl.PlantedIPFromStaleRead.Name()}
}

// FindTimes are how fast exploration found one defect over its seeds, each list sorted.
type FindTimes struct {
	Found int // the seeds that found it
	// Own are the findings that are the defect's own: the shrunk program passes once the defects are
	// fixed (the fixed reference has races of its own that a program can stumble on first).
	Own    int
	Cases  []int     // each seed's cases to its finding, or its budget
	Secs   []float64 // each seed's wall time
	Shrunk []int     // each finding's shrunk actions
}

// TimeToFind explores with defect d switched on alone (a planted bug's switch where d is one),
// budget cases from each of seeds seeds, shrinking each finding with up to shrink runs (0: none);
// o gives the detectors, the generator and the scheduler. progress, if set, is called after each seed.
func TimeToFind(d string, o Options, seeds, budget, shrink int, progress func(seed int)) (FindTimes, error) {
	sw, err := impl.ParseDefects(d)
	if p, ok := impl.Planted(d); err != nil && ok { // the planted bug is no defect ParseDefects knows
		sw = impl.Switches{p: true}
	}
	fixed, _ := impl.ProfileSwitches(impl.Fixed)
	o.Profile, o.Defects = d, sw
	var ft FindTimes
	for s := 1; s <= seeds; s++ {
		t0 := time.Now()
		f, ran, err := Explore(o, budget, uint64(s)*7919, cmp.Or(shrink, -1))
		if err != nil {
			return ft, err
		}
		if f != nil {
			ft.Found++
			ran = f.Cases
			ft.Shrunk = append(ft.Shrunk, f.Shrunk.Actions)
			if again, err := Run(f.Shrunk.Program, Options{Profile: impl.Fixed, Defects: fixed}); err == nil && !again.Failed(o.Detectors) {
				ft.Own++
			}
		}
		ft.Cases = append(ft.Cases, ran)
		ft.Secs = append(ft.Secs, time.Since(t0).Seconds())
		if progress != nil {
			progress(s)
		}
	}
	slices.Sort(ft.Cases)
	slices.Sort(ft.Secs)
	slices.Sort(ft.Shrunk)
	return ft, nil
}
