package harness

import (
	"fmt"
	"time"

	"github.com/csconform/csconform/detect"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// LivenessBound is how long an object may stay in a transitional state in a cloud left alone: the
// longest wait of a command (wait), of a router's boot behind the network's lock
// (router.ready.timeout + network.lock.timeout) or of a work job (vm.job.timeout: CloudStack declares
// it as the time "to wait before attempting to cancel a job", though no caller's wait enforces it), and
// then power sync's time to settle what is left (GhostBound). With CloudStack's defaults, 35 minutes.
func LivenessBound(cfg *impl.Config) time.Duration {
	longest := max(cfg.Seconds("wait"), cfg.Seconds("router.ready.timeout")+cfg.Seconds("network.lock.timeout"), cfg.Millis("vm.job.timeout"))
	return longest + GhostBound(cfg)
}

// networkLivenessBound is a network's: one whose implementer died with its server (a restart in the
// middle of an implementation) stays Implementing until the orphaned-network cleanup finds it older
// than job.expire.minutes — CloudStack's own answer to the "network stuck in Implementing" reports —
// and the job GC's next pass after that.
func networkLivenessBound(cfg *impl.Config) time.Duration {
	return time.Duration(cfg.Int("job.expire.minutes"))*time.Minute + impl.GCInterval + LivenessBound(cfg)
}

// jobLivenessBound is an unfinished job's: LivenessBound, or sooner the job GC's duty — each tick
// (GCInterval) it expunges the unfinished jobs created job.expire.minutes ago or earlier
// (expungeExpiredUnfinishedJobs), whatever their threads still do; a tick whose global lock a
// peer holds is that peer's to run, so two ticks past the age at most.
func jobLivenessBound(cfg *impl.Config) time.Duration {
	return min(LivenessBound(cfg), time.Duration(cfg.Int("job.expire.minutes"))*time.Minute+2*impl.GCInterval)
}

// inTransition lists what is in a transitional state now: VMs Starting, Stopping or Migrating,
// networks Implementing, jobs in progress — each with when it got there, as far as the records say.
func (c *Cluster) inTransition() []detect.Transition {
	var out []detect.Transition
	c.walkTransitions(func(since time.Time, bound time.Duration, duty bool, describe func() (object, what string)) {
		object, what := describe()
		out = append(out, detect.Transition{Object: object, What: what, Since: since, Bound: bound, Duty: duty})
	})
	return out
}

// transitionStatus is inTransition reduced to what the liveness looks ask: whether anything is in a
// transitional state, whether any of it is overdue at now, and the earliest time after now at which
// something falls due (zero: none), with no description formatted (inTransition at every step was
// 7% of explore's CPU).
func (c *Cluster) transitionStatus(now time.Time) (some, overdue bool, due time.Time) {
	c.walkTransitions(func(since time.Time, bound time.Duration, _ bool, _ func() (string, string)) {
		some = true
		overdue = overdue || (detect.Transition{Since: since, Bound: bound}).Overdue(now)
		if d := since.Add(bound); !since.IsZero() && d.After(now) && (due.IsZero() || d.Before(due)) {
			due = d
		}
	})
	return some, overdue, due
}

// walkTransitions calls visit for each thing in a transitional state, with when it got there, its
// bound, and how to describe it. The database's filters call it and keep no row, so nothing is
// copied out; both inTransition and transitionStatus read the same rows at the same scheduling points.
func (c *Cluster) walkTransitions(visit func(since time.Time, bound time.Duration, duty bool, describe func() (object, what string))) {
	bound, netBound, jBound := LivenessBound(c.Config), networkLivenessBound(c.Config), jobLivenessBound(c.Config)
	// Expunging is left out: the reference has no expunge task (expunge.interval) that would retry it,
	// so it rests there until a client expunges
	c.DB.VMs(func(v *impl.VMVO) bool {
		if !v.Removed && (v.State == vm.Starting || v.State == vm.Stopping || v.State == vm.Migrating) {
			visit(v.UpdateTime, bound, false, func() (string, string) {
				return impl.VMObject(v.ID), fmt.Sprintf("VM %d (%s) is %s", v.ID, v.Name, v.State)
			})
		}
		return false
	})
	c.DB.Networks(func(n *impl.NetworkVO) bool {
		if !n.Removed && n.State == network.Implementing {
			visit(n.ImplementingSince, netBound, false, func() (string, string) {
				return impl.NetworkObject(n.ID), fmt.Sprintf("network %d is Implementing", n.ID)
			})
		}
		return false
	})
	// the index of live jobs holds exactly the IN_PROGRESS ones
	c.DB.JobsInProgress(func(j *impl.JobVO) bool {
		visit(j.Created, jBound, jBound < bound, func() (string, string) {
			return impl.JobObject(j.ID), fmt.Sprintf("job %d (%s of %s %d) is in progress", j.ID, j.Cmd, j.InstanceType, j.InstanceID)
		})
		return false
	})
}

// checkLiveness is the end of a simulated run: the cloud, left alone, runs on until nothing is in a
// transitional state or something in one has outstayed its bound; what is in transition past its
// bound then is stuck (a network stuck in Implementing is the most common real report of this
// kind). A run where nothing is in transition at its end pays nothing and its history is unchanged.
func (c *Cluster) checkLiveness() error {
	ts := c.inTransition()
	if len(ts) == 0 {
		return nil
	}
	// run until nothing is in transition, or until the last of them is past its bound
	var until time.Time
	for _, t := range ts {
		if end := t.Since.Add(t.Bound); end.After(until) {
			until = end
		}
	}
	// stop as soon as nothing is in transition or something has outstayed its bound: a thing stuck
	// past its bound that other activity (a retry, an HA attempt) later unsticks is still stuck
	quietOrOverdue := func() bool {
		some, overdue, _ := c.transitionStatus(c.Now())
		return !some || overdue
	}
	if err := c.w.runUntil(until.Add(time.Second), quietOrOverdue); err != nil {
		return err
	}
	c.reportOverdue(time.Time{}, time.Time{})
	return nil
}

// reportOverdue reports what is in a transitional state past its bound now
// (detect.StuckInTransition), its time counted from quiet if later (the end of the last fault); once
// an object: report keys a violation by its invariant and object. A duty's time is counted from
// serverQuiet (the end of the last management server's fault).
func (c *Cluster) reportOverdue(quiet, serverQuiet time.Time) {
	now := c.Now()
	if _, overdue, _ := c.transitionStatus(now); !overdue {
		return // nothing past its bound: the list below would report nothing (a look a simulated minute)
	}
	added := false
	for _, v := range detect.StuckInTransition(c.inTransition(), now, quiet, serverQuiet) {
		added = c.report(v) || added
	}
	if added {
		SortViolations(c.Violations)
	}
}
