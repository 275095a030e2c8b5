package harness

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/csconform/csconform/detect"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/vm"
)

// OutsideChecks is the checking of a world that sees the server from outside (containers, an external
// CloudStack): two looks (detect.TwoLooks) for the domains' truth; what OutsideLacks names (network-lock
// needs each write's lock holder, which stays in the server) is not checked; each violation is
// reported once, into the history and with the steps that led to it.
type OutsideChecks struct {
	looks detect.TwoLooks
	seen  map[string]bool
}

// Add checks a snapshot and returns the violations new in it. objs names, for a violation's object,
// the other objects its trail should follow (a domain's VM records).
func (oc *OutsideChecks) Add(rec *Recorder, s invariant.Snapshot, objs func(object string) []string) []Violation {
	return oc.addChecked(rec, invariant.Check(s), objs)
}

// findingKind tells apart the findings one invariant can make of one object: an address free in the
// pool, allocated to another VM, or used by several running domains. Each is reported once, so one
// seen first (a new VM's record holds the address before its domain runs) does not hide the next.
func findingKind(v invariant.Violation) string {
	switch {
	case strings.Contains(v.Message, " running domains: "):
		return "shared"
	case strings.Contains(v.Message, "free"):
		return "free"
	case strings.Contains(v.Message, "allocated to"):
		return "allocated"
	}
	return ""
}

func (oc *OutsideChecks) addChecked(rec *Recorder, vs []invariant.Violation, objs func(object string) []string) []Violation {
	if oc.seen == nil {
		oc.seen = map[string]bool{}
	}
	var out []Violation
	for _, v := range oc.looks.Confirm(vs) {
		if _, lacks := OutsideLacks[DetectorCap(v.Invariant)]; lacks {
			continue
		}
		key := v.Invariant + "|" + v.Object + "|" + findingKind(v)
		if oc.seen[key] {
			continue
		}
		oc.seen[key] = true
		rec.Emit(history.Event{Actor: "checker", Kind: history.Violation, Object: v.Object, To: v.Invariant, Detail: v.Message})
		var trail []TrailEvent
		for _, e := range rec.Trail(append([]string{v.Object}, objs(v.Object)...), v.Time, 30) {
			trail = append(trail, TrailEvent{Time: e.Time, Actor: e.Actor, Event: describe(e)})
		}
		out = append(out, Violation{Violation: v, Trail: trail})
	}
	return out
}

// RealTime is the part of World shared by the worlds seen from outside, in real time (containers,
// an external CloudStack): async steps run on goroutines, waits end with the run's context, and the
// background looks (the world's checker) stop once. A world embeds it (NewRealTime).
type RealTime struct {
	ctx    context.Context
	wg     sync.WaitGroup
	stopBG func()
}

// NewRealTime is the real-time part of a world whose run ends with ctx.
func NewRealTime(ctx context.Context) *RealTime { return &RealTime{ctx: ctx} }

// Ctx is the run's context.
func (r *RealTime) Ctx() context.Context { return r.ctx }

func (r *RealTime) Async(_ string, fn func()) { r.wg.Go(fn) }
func (r *RealTime) AwaitAsync()               { r.wg.Wait() }
func (r *RealTime) Ended() error              { return r.ctx.Err() }

// Drive calls fn; async steps it left running (it failed) are waited for.
func (r *RealTime) Drive(fn func()) error {
	defer r.AwaitAsync()
	fn()
	return nil
}

// Background runs each loop on its own goroutine until StopBackground (or the run's context ends).
func (r *RealTime) Background(loops ...func(ctx context.Context)) {
	bg, stop := context.WithCancel(r.ctx)
	var wg sync.WaitGroup
	for _, loop := range loops {
		wg.Go(func() { loop(bg) })
	}
	r.stopBG = sync.OnceFunc(func() { stop(); wg.Wait() })
}

// StopBackground stops the background loops and waits for them to end.
func (r *RealTime) StopBackground() {
	if r.stopBG != nil {
		r.stopBG()
	}
}

// Pause sleeps d of wall time.
func (r *RealTime) Pause(d time.Duration) error {
	if !SleepCtx(r.ctx, d) {
		return r.ctx.Err()
	}
	return nil
}

// History: a world seen from outside records no state changes of the server's; its until
// conditions are judged on its records (UntilObject: no object to search the history for).
func (r *RealTime) History() Events                         { return Events{} }
func (r *RealTime) UntilObject(Step) (string, string, bool) { return "", "", true }

// NewCase: from outside, a row knows the step's network, not the VM's record.
func (r *RealTime) NewCase(st Step, client string) CaseResult {
	cr := CaseResult{Case: st.Case, Op: st.Op, Path: pathOf(st.Op), VM: st.VM, client: client}
	if len(st.Networks) > 0 {
		cr.Network = st.Networks[0]
	}
	return cr
}

// SleepCtx sleeps d of real time; false if ctx ended first.
func SleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// tableWorld is what fillTable reads of a world besides its history: the VMs' final records and,
// where the server's log is at hand, what it says of an op.
type tableWorld interface {
	vmState(name string) (vm.State, bool)
	// retried says whether an op passed after a failed first attempt; cleanupDuring what the
	// orphaned-network cleanup did to network nid while the op ran.
	retried(op invariant.ClientOp) bool
	cleanupDuring(nid int64, op invariant.ClientOp) string
}

// FillOutsideTable fills the table of a world that sees the server from outside: its log is not at
// hand, so no retry or cleanup is read from it; vmState is the VMs' final records.
func FillOutsideTable(res *Result, rec *Recorder, vmState func(name string) (vm.State, bool)) {
	fillTable(res, rec, outsideTable(vmState))
}

type outsideTable func(name string) (vm.State, bool)

func (t outsideTable) vmState(name string) (vm.State, bool)         { return t(name) }
func (outsideTable) retried(invariant.ClientOp) bool                { return false }
func (outsideTable) cleanupDuring(int64, invariant.ClientOp) string { return "" }

// fillTable fills a run's table, every world's: each case's result from its client's last op in the
// history, its VM's final record, and what the server's log says of it where the world has it.
func fillTable(res *Result, rec *Recorder, w tableWorld) {
	last := map[string]invariant.ClientOp{} // each client's last op
	rec.mu.Lock()
	for _, o := range rec.Ops {
		last[o.Client] = o
	}
	rec.mu.Unlock()
	for i := range res.Cases {
		cr := &res.Cases[i]
		op := last[cr.client]
		if op.ID == 0 {
			cr.Result = "not run"
			continue
		}
		if op.Return.IsZero() {
			cr.Result = "pending"
		} else {
			cr.Duration = op.Return.Sub(op.Call)
			cr.Result = "passed"
			if !op.OK {
				cr.Result, cr.Err = "failed", op.Err
			} else if w.retried(op) {
				cr.Result = "retried"
			}
		}
		if st, ok := w.vmState(cr.VM); ok {
			cr.FinalState = string(st)
		}
		if cr.networkID != 0 {
			cr.Cleanup = w.cleanupDuring(cr.networkID, op)
		}
	}
}
