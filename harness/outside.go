package harness

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/vm"
)

// twoLooks is the checking of a world whose records and domains are read one after the other, not
// atomically (the real-time worlds): a violation of the domains' truth counts once two checks in a
// row see it. Violations judged on the history alone stand at once.
type twoLooks struct {
	prev map[string]bool // truth violations seen by the previous check
}

func (t *twoLooks) confirm(vs []invariant.Violation) []invariant.Violation {
	cur := map[string]bool{}
	var out []invariant.Violation
	for _, v := range vs {
		switch v.Invariant {
		case invariant.OrphanDomain, invariant.IPConflict, invariant.VolumeInUse:
			k := v.Invariant + "|" + v.Object
			cur[k] = true
			if !t.prev[k] {
				continue
			}
		}
		out = append(out, v)
	}
	t.prev = cur
	return out
}

// outsideChecks is the checking of a world that sees the server from outside (containers, an external
// CloudStack): two looks (twoLooks) for the domains' truth; network-lock needs each write's lock
// holder, which stays in the server, and is not checked; each violation is reported once, into the
// history and with the steps that led to it.
type outsideChecks struct {
	looks twoLooks
	seen  map[string]bool
}

// add checks a snapshot and returns the violations new in it. objs names, for a violation's object,
// the other objects its trail should follow (a domain's VM records).
func (oc *outsideChecks) add(rec *Recorder, s invariant.Snapshot, objs func(object string) []string) []Violation {
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

func (oc *outsideChecks) addChecked(rec *Recorder, vs []invariant.Violation, objs func(object string) []string) []Violation {
	if oc.seen == nil {
		oc.seen = map[string]bool{}
	}
	var out []Violation
	for _, v := range oc.looks.confirm(vs) {
		if v.Invariant == invariant.NetworkLock {
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

// realTime is the part of World shared by the worlds seen from outside, in real time (containers,
// an external CloudStack): async steps run on goroutines, waits end with ctx, and the background
// looks (the world's checker) stop once.
type realTime struct {
	ctx    context.Context
	wg     sync.WaitGroup
	stopBG func()
}

func (r *realTime) Async(_ string, fn func()) { r.wg.Go(fn) }
func (r *realTime) AwaitAsync()               { r.wg.Wait() }
func (r *realTime) Ended() error              { return r.ctx.Err() }

// Drive calls fn; async steps it left running (it failed) are waited for.
func (r *realTime) Drive(fn func()) error {
	defer r.AwaitAsync()
	fn()
	return nil
}

// background runs each loop on its own goroutine until stopBackground (or ctx ends).
func (r *realTime) background(loops ...func(ctx context.Context)) {
	bg, stop := context.WithCancel(r.ctx)
	var wg sync.WaitGroup
	for _, loop := range loops {
		wg.Go(func() { loop(bg) })
	}
	r.stopBG = sync.OnceFunc(func() { stop(); wg.Wait() })
}

// stopBackground stops the background looks and waits for the last one to end.
func (r *realTime) stopBackground() {
	if r.stopBG != nil {
		r.stopBG()
	}
}

// Pause sleeps d of wall time.
func (r *realTime) Pause(d time.Duration) error {
	if !sleepCtx(r.ctx, d) {
		return r.ctx.Err()
	}
	return nil
}

// History: a world seen from outside records no state changes of the server's; its until
// conditions are judged on its records (UntilObject: no object to search the history for).
func (r *realTime) History() []history.Event                { return nil }
func (r *realTime) UntilObject(Step) (string, string, bool) { return "", "", true }

// NewCase: from outside, a row knows the step's network, not the VM's record.
func (r *realTime) NewCase(st Step, client string) CaseResult {
	cr := CaseResult{Case: st.Case, Op: st.Op, Path: pathOf(st.Op), VM: st.VM, client: client}
	if len(st.Networks) > 0 {
		cr.Network = st.Networks[0]
	}
	return cr
}

// sleepCtx sleeps d of real time; false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
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

// serverOutOfReach is the table's view of a world that sees the server from outside: its log is not
// at hand, so no retry or cleanup is read from it.
type serverOutOfReach struct{}

func (serverOutOfReach) retried(invariant.ClientOp) bool                { return false }
func (serverOutOfReach) cleanupDuring(int64, invariant.ClientOp) string { return "" }

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
