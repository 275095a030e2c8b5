package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
)

// Several management servers, pinned to the Java (apache/cloudstack main past 4.22):
//   - ClusteredAgentManagerImpl.getAttache / ClusteredAgentAttache.send: a command for a host another
//     server owns goes to that server (read from host.mgmt_server_id on each send);
//   - ClusterManagerImpl.peerScan: a peer whose mshost row is older than cluster.heartbeat.threshold
//     (150 s) has left; ClusteredAgentManagerImpl.onManagementNodeLeft → markHostsAsDisconnected;
//   - AsyncJobManagerImpl.onManagementNodeLeft → cleanupLeftOverJobs(msHost.getId()): the row id,
//     which no job's msid column holds (M1); the fix passes getMsid().
func TestPeerServerLeaves(t *testing.T) {
	sc := loadScenario(t, "../conformance/scenarios/peer-leaves-mid-start.yaml")
	for _, c := range []struct {
		profile string
		// jobsFailedBy: who fails ms2's in-flight jobs, and when after the stop (about the threshold)
		jobsFailedBy string
		jobsFailedIn time.Duration
	}{
		{"cloudstack-4.22", "ms2:main", 30 * time.Minute},              // nobody until ms2 is back (M1)
		{"fixed", "Cluster-Heartbeat", impl.ClusterHeartbeatThreshold}, // ms1, once ms2's row is 150 s old
	} {
		t.Run(c.profile, func(t *testing.T) {
			r, err := RunScenario(sc, c.profile, nil, 0)
			require.NoError(t, err)
			var stop, left, failed time.Time
			var reconnected bool
			var failedBy string
			for e := range r.cluster.Rec.History().All() {
				switch {
				case e.Kind == history.Fault && e.To == "peer-stop" && stop.IsZero():
					stop = e.Time
				case e.Kind == history.Log && strings.HasPrefix(e.Detail, "Detected management node left") && left.IsZero():
					left = e.Time
				case e.Kind == history.State && strings.HasPrefix(e.Object, "job:") && e.To == "FAILED" && failed.IsZero():
					failed, failedBy = e.Time, e.Actor
				case e.Kind == history.State && e.Object == "host:h2" && e.To == "Connecting" && !stop.IsZero() && !strings.HasPrefix(e.Actor, "ms2:"):
					reconnected = true // h2's agent went to the next server in its list
				}
			}
			require.False(t, stop.IsZero(), "no peer-stop")
			assert.True(t, reconnected, "h2's agent did not reconnect to ms1")
			assert.InDelta(t, impl.ClusterHeartbeatThreshold.Seconds(), left.Sub(stop).Seconds(), 3, "the peer was judged gone %s after it stopped", left.Sub(stop))
			assert.Equal(t, c.jobsFailedBy, failedBy)
			assert.InDelta(t, c.jobsFailedIn.Seconds(), failed.Sub(stop).Seconds(), 3)
		})
	}
}

// A start placed on a host another server owns is sent through that server (forwarded).
func TestCommandGoesThroughTheHostsOwner(t *testing.T) {
	sc := loadScenario(t, "../conformance/scenarios/peer-gc-races-implement.yaml")
	r, err := RunScenario(sc, "fixed", nil, 0)
	require.NoError(t, err)
	var forwarded []string
	for e := range r.cluster.Rec.History().All() {
		if e.Kind == history.Log && strings.HasPrefix(e.Detail, "Forwarding StartCommand") {
			forwarded = append(forwarded, e.Actor+" "+e.Detail)
		}
	}
	require.NotEmpty(t, forwarded, "ms1's start of v1 on h2 (owned by ms2) was not forwarded")
	assert.Contains(t, forwarded[0], "to the management server ms2 that host h2 is connected to")
	assert.False(t, strings.HasPrefix(forwarded[0], "ms2:"), "the forward is ms1's: %s", forwarded[0])
}

// M1 breaks no safety invariant on its own: the left server's jobs stay IN_PROGRESS, power sync
// postpones every report of the VM they were starting and the stall scan skips it, so the VM waits in
// Starting, its domain running, until the server comes back (30 minutes here). left-server-job is the
// detector of that class: a job of a stopped server still in progress leftServerJobBound (the 150 s
// heartbeat threshold and a minute) after it stopped while another server ran. It fails under M1
// alone and passes on the fix, whose peer fails the jobs at 150 s.
func TestLeftServerJobCatchesM1(t *testing.T) {
	sc := loadScenario(t, "../conformance/scenarios/peer-leaves-mid-start.yaml")
	sc.Expect = nil
	for _, c := range []struct {
		name string
		sw   impl.Switches
		want bool
	}{
		{"M1 alone", impl.Switches{impl.M1: true}, true},
		{"fixed", impl.Switches{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := RunScenario(sc, "custom", c.sw, 0)
			require.NoError(t, err)
			var left []string
			for _, v := range r.cluster.Violations {
				if v.Invariant == invariant.LeftServerJob {
					left = append(left, v.Object+": "+v.Message)
				} else {
					t.Errorf("unexpected violation %s", v.Violation)
				}
			}
			assert.Equal(t, c.want, len(left) > 0, "left-server-job violations: %v", left)
		})
	}
}
