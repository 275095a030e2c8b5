package detect

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A network left Implementing (the planted bug of harness's TestLivenessFlagsAStuckNetwork: its lock
// held by a server gone for good, so the orphaned-network cleanup never takes it) is stuck once past
// its bound; within it, or with no known since, or within its bound of the last fault's end, it is not.
func TestStuckInTransition(t *testing.T) {
	now := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	bound := 35 * time.Minute
	net := func(since time.Time) Transition {
		return Transition{Object: "network:1", What: "network 1 is Implementing", Since: since, Bound: bound}
	}
	for _, c := range []struct {
		name  string
		t     Transition
		quiet time.Time
		want  bool
	}{
		{"Implementing for 40 minutes (planted)", net(now.Add(-40 * time.Minute)), time.Time{}, true},
		{"exactly its bound", net(now.Add(-bound)), time.Time{}, true},
		{"Implementing for 10 minutes", net(now.Add(-10 * time.Minute)), time.Time{}, false},
		{"since unknown", net(time.Time{}), time.Time{}, false},
		{"a fault ended 5 minutes ago", net(now.Add(-40 * time.Minute)), now.Add(-5 * time.Minute), false},
		{"a fault ended 36 minutes ago", net(now.Add(-40 * time.Minute)), now.Add(-36 * time.Minute), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs := StuckInTransition([]Transition{c.t}, now, c.quiet, c.quiet)
			assert.Equal(t, c.want, len(vs) == 1, "violations: %v", vs)
			for _, v := range vs {
				assert.Equal(t, "stuck-in-transition", v.Invariant)
				assert.Equal(t, "network:1", v.Object)
				assert.Regexp(t, `^network 1 is Implementing since \d+m0s ago, past the 35m0s it may take in a cloud left alone$`, v.Message)
			}
		})
	}
}

// The job GC's duty (expungeExpiredUnfinishedJobs, the planted bug job-gc-keeps-expired-unfinished-
// jobs: a job whose thread waits on a cut link is never expunged): a host's or a link's fault does
// not hold the GC up, so the duty is counted from the last management server's fault only.
func TestStuckInTransitionDuty(t *testing.T) {
	now := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	job := Transition{Object: "job:7", What: "job 7 (DeployVMCmd of VirtualMachine 3) is in progress", Since: now.Add(-12 * time.Minute), Bound: 10*time.Minute + 20*time.Second, Duty: true}
	for _, c := range []struct {
		name               string
		quiet, serverQuiet time.Time
		want               bool
	}{
		{"a link still cut (planted: the GC never expunged it)", now, time.Time{}, true},
		{"a server restarted a minute ago", now, now.Add(-time.Minute), false},
		{"a server restarted 11 minutes ago, a host fault just ended", now.Add(-time.Second), now.Add(-11 * time.Minute), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs := StuckInTransition([]Transition{job}, now, c.quiet, c.serverQuiet)
			assert.Equal(t, c.want, len(vs) == 1, "violations: %v", vs)
		})
	}
	notDuty := job
	notDuty.Duty = false
	assert.Empty(t, StuckInTransition([]Transition{notDuty}, now, now, time.Time{}), "a transition that is no duty waits for the fault's end")
}
