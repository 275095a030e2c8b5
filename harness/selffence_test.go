package harness

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
)

// TestKVMHAMonitorSelfFence pins the agent's self-fence (issue 34 item 7) as KVMHAMonitor.runHeartBeat
// and executePoolHeartBeatCommand do it (apache/cloudstack@0351eca9 and a later upstream copy,
// plugins/hypervisors/kvm/src/main/java/com/cloud/hypervisor/kvm/resource/KVMHAMonitor.java): the
// heartbeat write is tried heartbeat.update.max.tries (5) times, heartbeat.update.retry.sleep (10 s)
// apart, and when the last try fails and reboot.host.and.alert.management.on.heartbeat.timeout is
// true (AgentProperties' default) kvmheartbeat.sh -c reboots the host 5 s later: its domains die. With
// the setting off the failed writes change nothing.
func TestKVMHAMonitorSelfFence(t *testing.T) {
	cases := []struct {
		name    string
		config  map[string]string
		fenced  bool
		running bool // web1's domain still runs on h1 at the end of the fault
	}{
		{"the default: the host reboots", nil, true, false},
		{"the setting off: the domain runs on", map[string]string{SelfFenceKey: "false"}, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
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
			var began, fenced time.Time
			var running bool
			cl.Go("scenario", func() {
				defer func() { done = true }()
				if err := cl.Deploy("client-1", "web1", []string{"n1"}, "h1"); err != nil {
					t.Error(err)
					return
				}
				began = cl.Now()
				if err := faults.Run(cl, faults.Spec{Kind: "heartbeat-fail", Host: "h1", Duration: 100 * time.Second}); err != nil {
					t.Error(err)
				}
				running = slices.Contains(cl.w.running("h1"), "i-2-2-VM")
				cl.Sleep(5 * time.Minute)
			})
			if err := cl.sim().sched.RunUntil(cl.Now().Add(time.Hour), func() bool { return done }); err != nil {
				t.Fatal(err)
			}
			tries := 0
			for e := range cl.Rec.History().All() {
				if e.Kind == history.Log && e.Actor == "agent/h1/KVMHAMonitor" && strings.Contains(e.Detail, "; try: ") {
					tries++
				}
				if e.Kind == history.Fault && e.To == "host-power-off" && strings.HasPrefix(e.Detail, "self-fence: ") && fenced.IsZero() {
					fenced = e.Time
				}
			}
			if got := !fenced.IsZero(); got != c.fenced {
				t.Fatalf("self-fenced: %v, want %v", got, c.fenced)
			}
			if running != c.running {
				t.Errorf("web1's domain running on h1 after the fault: %v, want %v", running, c.running)
			}
			if !c.fenced {
				if tries != 0 {
					t.Errorf("%d failed writes logged with the setting off, want none", tries)
				}
				return
			}
			// the first failed write at the agent's next beat (60 s apart), then 5 tries 10 s apart and
			// kvmheartbeat.sh -c's 5 s
			if d := fenced.Sub(began); d < 55*time.Second || d > 60*time.Second+55*time.Second {
				t.Errorf("rebooted %v after the fault began, want between 55 s and 115 s", d)
			}
			if tries != 5 {
				t.Errorf("%d failed writes before the reboot, want 5", tries)
			}
		})
	}
}
