package detect

import (
	"fmt"
	"iter"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
)

// MaxRetries is max.retries, CloudStack's default (HighAvailabilityManagerImpl.configure:
// NumbersUtil.parseInt(params.get("max.retries"), 5)): how often HA tries a work item before it gives
// up. The detector's own, so that a regression of the reference's count does not move it too.
const MaxRetries = 5

// haWorkRe matches HaWorkVO.toString: HAWork[id-type-instanceId-previousState-step].
var haWorkRe = regexp.MustCompile(`HAWork\[(\d+)-(\w+)-(\d+)-(\w*)-(\w+)\]`)

// HaItem is one op_ha_work row as HA's log lines tell it.
type HaItem struct {
	ID      int64
	Type    string // HA (a restart) or CheckStop
	VM      string // vm:<id>
	Created int64  // seq of its first line
	// Tries are its processing windows: from a worker's "Processing work" to the line that ends the
	// try (rescheduled, completed, given up, cancelled) or, for a try a stopped server never ended,
	// none (End 0).
	Tries []HaTry
	// End is how it ended, "" while open: done, gave-up or cancelled.
	End     string
	EndSeq  int64
	EndTime time.Time
}

// HaTry is one processing of an item by a worker.
type HaTry struct {
	Actor      string // the worker thread, its server's prefix included ("ms2:HA-Worker-1")
	Begin, End int64  // seqs; End 0: the try never ended (its server stopped)
	At         time.Time
	Lines      []string
}

// Item ends, as the log says them.
const (
	haDone      = "done"
	haGaveUp    = "gave-up"
	haCancelled = "cancelled"
)

// HaItems reads HA's work items from the log lines of a history, in id order.
func HaItems(events iter.Seq[history.Event]) []*HaItem {
	items := map[int64]*HaItem{}
	open := map[string]*HaItem{} // a worker's item in process
	for e := range events {
		if e.Kind != history.Log {
			continue
		}
		var m []string
		if strings.Contains(e.Detail, "HAWork[") {
			m = haWorkRe.FindStringSubmatch(e.Detail)
		}
		if m == nil {
			// a line of the try a worker has open (the worker's thread runs one item at a time)
			if it := open[e.Actor]; it != nil && len(it.Tries) > 0 {
				tr := &it.Tries[len(it.Tries)-1]
				tr.Lines = append(tr.Lines, e.Detail)
			}
			continue
		}
		id, _ := strconv.ParseInt(m[1], 10, 64)
		it := items[id]
		if it == nil {
			it = &HaItem{ID: id, Type: m[2], VM: "vm:" + m[3], Created: e.Seq}
			items[id] = it
		}
		closeTry := func(end string) {
			if o := open[e.Actor]; o == it && len(it.Tries) > 0 {
				it.Tries[len(it.Tries)-1].End = e.Seq
			}
			delete(open, e.Actor)
			if end != "" {
				it.End, it.EndSeq, it.EndTime = end, e.Seq, e.Time
			}
		}
		switch d := e.Detail; {
		case strings.HasPrefix(d, "Processing work "):
			it.Tries = append(it.Tries, HaTry{Actor: e.Actor, Begin: e.Seq, At: e.Time})
			open[e.Actor] = it
		case strings.HasPrefix(d, "Rescheduling work "):
			closeTry("")
		case strings.HasPrefix(d, "Completed work "):
			closeTry(haDone)
		case strings.HasPrefix(d, "Giving up"):
			closeTry(haGaveUp)
		case strings.HasPrefix(d, "Cancelling ") && strings.HasSuffix(d, "as it is not needed anymore"):
			closeTry(haCancelled)
		default:
			if o := open[e.Actor]; o == it && len(it.Tries) > 0 {
				tr := &it.Tries[len(it.Tries)-1]
				tr.Lines = append(tr.Lines, d)
			}
		}
	}
	out := make([]*HaItem, 0, len(items))
	for _, id := range slices.Sorted(maps.Keys(items)) {
		out = append(out, items[id])
	}
	return out
}

// within says whether seq falls inside one of the item's tries.
func (it *HaItem) within(seq int64) bool {
	return slices.ContainsFunc(it.Tries, func(tr HaTry) bool { return tr.Begin <= seq && (tr.End == 0 || seq <= tr.End) })
}

// dropReason is restart()'s line when it ends an item without restarting its VM because the VM is
// not as the item captured it: legitimate when something else moved the VM meanwhile.
const dropReason = " has been changed."

// updatesRe reads restart()'s "has been changed" line: the VM's update count now and the item's.
var updatesRe = regexp.MustCompile(`last updated = (\d+) previous updated = (\d+)`)

// HaPromise judges HA's work queue from a recorded history (ha-promise), against what
// HighAvailabilityManagerImpl promises:
//
//   - A restart item that HA ends because the VM "has been changed" drops the VM; that is right when
//     something else moved the VM since the item captured it. When nothing but the item's own tries
//     did — no client operation on the VM, and every change of its record made by the item's worker
//     or by a work job that worker submitted — and the VM is not Running at the end, HA dropped a VM
//     it was asked to restart.
//   - An item is given up only after MaxRetries tries.
//   - A power report postponed for "pending job or HA tasks" has one: a VM work job of the VM in
//     progress, or an HA restart item of it not yet ended.
//
// haEnabled says whether a VM ("vm:<id>") is HA-enabled (vm_instance.ha_enabled, listVirtualMachines'
// haenable): HA promises nothing for the others, and says so ("VM is not HA enabled so we're done").
func HaPromise(events iter.Seq[history.Event], haEnabled func(vm string) bool) []invariant.Violation {
	items := HaItems(events)
	var out []invariant.Violation
	// the VM's record: its state changes and the client operations on it, by seq
	type change struct {
		seq    int64
		to     string
		actor  string
		client bool
	}
	// VM work jobs: who submitted each, and which thread ran it (the actor of its end)
	type workJob struct {
		vm, submitter, executor string
		begin, end              int64
	}
	jobs := map[string]*workJob{}     // by job:<id>
	vmJobs := map[string][]*workJob{} // by vm:<id>
	jobsOpen := map[string]int{}      // vm → work jobs in progress now
	postponed := map[string]bool{}    // VMs already reported: the same hold postpones each report after
	changes := map[string][]change{}
	openAt := func(vm string, seq int64) bool {
		for _, it := range items {
			if it.VM == vm && it.Type == "HA" && it.Created <= seq && (it.End == "" || seq < it.EndSeq) {
				return true
			}
		}
		return false
	}
	for e := range events {
		switch e.Kind {
		case history.Call, history.Return:
			if strings.HasPrefix(e.Object, "vm:") {
				changes[e.Object] = append(changes[e.Object], change{seq: e.Seq, client: true})
			}
		case history.State:
			switch {
			case strings.HasPrefix(e.Object, "vm:"):
				changes[e.Object] = append(changes[e.Object], change{seq: e.Seq, to: e.To, actor: e.Actor})
			case strings.HasPrefix(e.Object, "job:"):
				if e.From == "" && strings.HasPrefix(e.Detail, "VmWork") {
					if _, inst, ok := strings.Cut(e.Detail, " VirtualMachine:"); ok {
						j := &workJob{vm: "vm:" + inst, submitter: e.Actor, begin: e.Seq}
						jobs[e.Object] = j
						vmJobs[j.vm] = append(vmJobs[j.vm], j)
						jobsOpen[j.vm]++
					}
				} else if j := jobs[e.Object]; j != nil && j.end == 0 && e.From == "IN_PROGRESS" && e.To != "IN_PROGRESS" {
					jobsOpen[j.vm]--
					j.executor, j.end = e.Actor, e.Seq
				}
			}
		case history.Log:
			if strings.HasPrefix(e.Detail, "There is pending job or HA tasks working on the VM.") && strings.HasPrefix(e.Object, "vm:") {
				if jobsOpen[e.Object] == 0 && !postponed[e.Object] && !openAt(e.Object, e.Seq) {
					postponed[e.Object] = true
					out = append(out, invariant.Violation{Invariant: invariant.HaPromise, Object: e.Object, Time: e.Time,
						Message: fmt.Sprintf("a power report of %s was postponed for pending work while it had none: no VM work job of it in progress and no HA restart item of it open", e.Object)})
				}
			}
		}
	}
	last := map[string]*HaItem{}
	for _, it := range items {
		if it.Type == "HA" {
			last[it.VM] = it
		}
		if it.End == haGaveUp && len(it.Tries) < MaxRetries {
			out = append(out, invariant.Violation{Invariant: invariant.HaPromise, Object: it.VM, Time: it.EndTime,
				Message: fmt.Sprintf("HA gave up HAWork %d of %s after %d tries, before max.retries (%d)", it.ID, it.VM, len(it.Tries), MaxRetries)})
		}
	}
	for _, vm := range slices.Sorted(maps.Keys(last)) {
		it := last[vm]
		if it.End != haDone || len(it.Tries) == 0 || !haEnabled(vm) {
			continue
		}
		// a try its server's stop cut (it never ended) is the server-restart path of the same drop,
		// whose verdict is open (docs/profiles.md, H3): not judged until it has its switch
		if slices.ContainsFunc(it.Tries[:len(it.Tries)-1], func(tr HaTry) bool { return tr.End == 0 }) {
			continue
		}
		final := it.Tries[len(it.Tries)-1]
		i := slices.IndexFunc(final.Lines, func(l string) bool {
			return strings.Contains(l, dropReason)
		})
		if i < 0 {
			continue
		}
		// the line says how many updates the VM had since the item's capture, which may predate the
		// item's first line (a caller's copy of the VM): HA's own changes must account for all of them
		updates := -1
		if m := updatesRe.FindStringSubmatch(final.Lines[i]); m != nil {
			now, _ := strconv.Atoi(m[1])
			prev, _ := strconv.Atoi(m[2])
			updates = now - prev
		}
		cs := changes[vm]
		end := ""
		for _, c := range cs {
			if !c.client {
				end = c.to
			}
		}
		if end == "Running" || end == "Destroyed" || end == "Expunging" || end == "Expunged" || end == "" {
			continue
		}
		// HA's own: a change by the worker of one of the item's tries, or by the thread that ran a
		// work job of the VM such a worker submitted, while it ran
		workers := map[string]bool{}
		for _, tr := range it.Tries {
			workers[tr.Actor] = true
		}
		own := func(c change) bool {
			if workers[c.actor] && it.within(c.seq) {
				return true
			}
			for _, j := range vmJobs[vm] {
				if j.executor == c.actor && j.begin <= c.seq && c.seq <= j.end && workers[j.submitter] && it.within(j.begin) {
					return true
				}
			}
			return false
		}
		moved := slices.ContainsFunc(cs, func(c change) bool {
			return c.seq > it.Created && (c.client || !own(c))
		})
		owned := 0
		for _, c := range cs {
			if !c.client && own(c) {
				owned++
			}
		}
		if moved || updates < 0 || owned < updates {
			continue
		}
		out = append(out, invariant.Violation{Invariant: invariant.HaPromise, Object: vm, Time: it.EndTime,
			Message: fmt.Sprintf("HA ended HAWork %d of %s as if the VM had been changed, but only its own %d tries had moved it since it was scheduled; the VM stays %s", it.ID, vm, len(it.Tries), end)})
	}
	return out
}
