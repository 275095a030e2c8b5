package harness

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
)

// The host world states, each by what the management server makes of it (fixed profile, h1 and its
// neighbour h2, web1 on h1):
//   - agent-restart is graceful: the agent sends a ShutdownCommand first, which
//     AgentManagerImpl.AgentHandler.processRequest answers with disconnectWithoutInvestigation(
//     ShutdownRequested): Up → Disconnected, no investigation;
//   - agent-kill closes the socket: the DISCONNECT task runs handleDisconnectWithInvestigation
//     (AgentDisconnected → Alert), the neighbour sees h1's heart beat: Disconnected-but-up, Alert;
//   - host-unreachable holds the link: MonitorTask's ping timeout, an inconclusive investigation
//     (nothing answers from h1, its heart beats: Disconnected), Alert until the link is back;
//   - host-power-off: silence, the ping timeout, and the neighbour reads a stopped heart: Down;
//   - heartbeat-fail alone changes nothing while the agent is connected (investigations only
//     follow a disconnect);
//   - host-remove: ResourceManagerImpl.deleteHost(forced): Removed.
func TestHostWorldStates(t *testing.T) {
	cases := []struct {
		fault      faults.Spec
		statuses   []host.Status // h1's statuses in order, from Up
		investiged bool
		config     map[string]string
	}{
		{faults.Spec{Kind: "agent-restart", Host: "h1", Duration: 20 * time.Second}, []host.Status{host.Disconnected, host.Connecting, host.Up}, false, nil},
		{faults.Spec{Kind: "agent-kill", Host: "h1", Duration: 20 * time.Second}, []host.Status{host.Alert, host.Connecting, host.Up}, true, nil},
		{faults.Spec{Kind: "host-unreachable", Host: "h1"}, []host.Status{host.Alert, host.Connecting, host.Up}, true, nil},
		{faults.Spec{Kind: "host-power-off", Host: "h1", Duration: 10 * time.Minute}, []host.Status{host.Down, host.Connecting, host.Up}, true, nil},
		// a live host's heartbeat failure, its self-fence off: nothing the server sees
		{faults.Spec{Kind: "heartbeat-fail", Host: "h1", Duration: 5 * time.Minute}, nil, false, map[string]string{SelfFenceKey: "false"}},
		// at the default KVMHAMonitor reboots h1 (selffence.go): its new agent connects before the
		// server misses the old one's pings, the second reboot is judged Down
		{faults.Spec{Kind: "heartbeat-fail", Host: "h1", Duration: 5 * time.Minute}, []host.Status{host.Connecting, host.Up, host.Down, host.Connecting, host.Up}, true, nil},
		{faults.Spec{Kind: "host-remove", Host: "h1"}, []host.Status{host.Removed}, false, nil},
	}
	for _, c := range cases {
		name := c.fault.Kind
		if c.config != nil {
			name += " " + fmt.Sprint(c.config)
		}
		t.Run(name, func(t *testing.T) {
			fixed, _ := impl.ProfileSwitches("fixed")
			cl, err := NewSimCluster(Options{Seed: 3, Hosts: []string{"h1", "h2"}, Defects: fixed, Config: c.config})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if err := cl.CreateNetwork("setup", "n1", false); err != nil {
				t.Fatal(err)
			}
			done := false
			cl.Go("scenario", func() {
				defer func() { done = true }()
				if err := cl.Deploy("client-1", "web1", []string{"n1"}, "h1"); err != nil {
					t.Error(err)
					return
				}
				if err := faults.Run(cl, c.fault); err != nil {
					t.Error(err)
				}
				cl.Sleep(time.Minute)
			})
			if err := cl.sim().sched.RunUntil(cl.Now().Add(time.Hour), func() bool { return done }); err != nil {
				t.Fatal(err)
			}
			var got []host.Status
			investigated := false
			started := false
			for e := range cl.Rec.History().All() {
				started = started || e.Kind == history.Fault
				if !started || e.Object != "host:h1" {
					continue
				}
				if e.Kind == history.State && e.To != e.From {
					got = append(got, host.Status(e.To))
				}
				investigated = investigated || e.Kind == history.Log && strings.HasPrefix(e.Detail, "Investigating why host h1")
			}
			if !slices.Equal(got, c.statuses) {
				t.Errorf("h1 went through %v, want %v", got, c.statuses)
			}
			if investigated != c.investiged {
				t.Errorf("investigated: %v, want %v", investigated, c.investiged)
			}
		})
	}
}

// A real world says why it cannot power a host or fail its heartbeat.
func TestHostFaultsUnavailableOutsideTheSimulator(t *testing.T) {
	c := &Cluster{w: &libvirtWorld{}, HostIDs: []string{"h1"}}
	for _, err := range []error{c.HostPower("h1", false), c.Heartbeat("h1", false)} {
		if err == nil || !strings.Contains(err.Error(), "is not available on libvirt: its hosts are real machines") {
			t.Errorf("got %v", err)
		}
	}
}

// Three graceful agent restarts of one host overlap, as explore drew them: A (0 s, 5 s down) stops
// the agent; B (2 s, 10 s) finds it stopped already; A's end starts the next agent (6 s); C (11.5 s)
// stops that one, which takes a second (a ShutdownCommand, then the socket), and B's end (12 s)
// starts another within it. C's stop ends only its own agent: the last keeps pinging and answering,
// and the host comes back Up and stays Up (it went silent and to Alert when C's clean-up took the
// last agent's tasks: explore --profile fixed --scheduler random --seed 3).
func TestOverlappingAgentRestartsLeaveTheNextAgentRunning(t *testing.T) {
	fixed, _ := impl.ProfileSwitches("fixed")
	cl, err := NewSimCluster(Options{Seed: 3, Hosts: []string{"h1"}, Defects: fixed})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	done := false
	restart := func(name string, at, down time.Duration) {
		cl.Go(name, func() {
			cl.Sleep(at)
			if err := faults.Run(cl, faults.Spec{Kind: "agent-restart", Host: "h1", Duration: down}); err != nil {
				t.Error(err)
			}
		})
	}
	cl.Go("scenario", func() {
		defer func() { done = true }()
		restart("fault-A", 0, 5*time.Second)
		restart("fault-B", 2*time.Second, 10*time.Second)
		restart("fault-C", 11500*time.Millisecond, 5*time.Second)
		cl.Sleep(10 * time.Minute)
	})
	if err := cl.sim().sched.RunUntil(cl.Now().Add(time.Hour), func() bool { return done }); err != nil {
		t.Fatal(err)
	}
	if st := cl.DB.Host("h1").Status; st != host.Up {
		t.Errorf("h1 is %s 10 minutes after the restarts, want Up", st)
	}
	for e := range cl.Rec.History().All() {
		if e.Object == "host:h1" && e.Kind == history.State && e.To == string(host.Alert) {
			t.Errorf("h1 went to Alert at %s: %s", e.Time.Format("15:04:05"), e.Detail)
		}
	}
}
