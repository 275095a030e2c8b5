package impl

import (
	"testing"
	"time"
)

// findByNameBottomUP (apache/cloudstack MockConfigurationDaoImpl@96988ea6) and simulate's reading of a
// row (SimulatorManagerImpl@1510b44f, MockConfigurationVO.getParameters): the oldest row whose scope
// holds the host wins, not the most specific; a row that skips a scope level never applies; count and
// result:fault as the Java treats them.
func TestSimMockLookup(t *testing.T) {
	t.Parallel()
	two := 2
	cases := []struct {
		name   string
		rows   []SimMock // configured in order
		host   string
		want   mockEffect
		active bool
	}{
		{"none", nil, "h1", mockEffect{}, false},
		{"host scope", []SimMock{{Zone: SimZone, Pod: SimPod, Cluster: SimCluster, Host: "h1", Values: "result:fail"}}, "h1",
			mockEffect{id: 1, fail: true, detail: "Simulated failure", count: true}, true},
		{"another host", []SimMock{{Zone: SimZone, Pod: SimPod, Cluster: SimCluster, Host: "h2", Values: "result:fail"}}, "h1", mockEffect{}, false},
		{"host without its cluster never applies", []SimMock{{Host: "h1", Values: "result:fail"}}, "h1", mockEffect{}, false},
		{"oldest first", []SimMock{{Zone: SimZone, Values: "wait:100"}, {Zone: SimZone, Pod: SimPod, Cluster: SimCluster, Host: "h1", Values: "result:fail"}}, "h1",
			mockEffect{id: 1, wait: 100 * time.Millisecond, count: true}, true},
		{"global", []SimMock{{Values: "wait:5|result:fail"}}, "h9", mockEffect{id: 1, wait: 5 * time.Millisecond, fail: true, detail: "Simulated failure", count: true}, true},
		{"fault is not counted", []SimMock{{Zone: SimZone, Values: "result:fault", Count: &two}}, "h1",
			mockEffect{id: 1, fail: true, detail: "java.lang.Exception: Simulated fault"}, true},
		{"value without a colon throws", []SimMock{{Values: "fail"}}, "h1",
			mockEffect{id: 1, fail: true, detail: "java.lang.ArrayIndexOutOfBoundsException: Index 1 out of bounds for length 1"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m SimMocks
			for _, r := range c.rows {
				m.Configure(r.Zone, r.Pod, r.Cluster, r.Host, "StopCommand", r.Values, r.Count, "", 0)
			}
			got, ok := m.simulate(c.host, "StopCommand")
			if ok != c.active || got != c.want {
				t.Fatalf("got %+v %v, want %+v %v", got, ok, c.want, c.active)
			}
			if _, ok := m.simulate(c.host, "StartCommand"); ok {
				t.Fatal("a mock of another command applied")
			}
		})
	}
}

// A counted mock is used up by its answers; a cleared one no longer applies.
func TestSimMockCountAndClear(t *testing.T) {
	t.Parallel()
	var m SimMocks
	one := 1
	r, _ := m.Configure(SimZone, "", "", "", "StartCommand", "wait:10", &one, "", 0)
	if e, ok := m.simulate("h1", "StartCommand"); !ok || e.wait != 10*time.Millisecond {
		t.Fatalf("first: %+v %v", e, ok)
	}
	m.used(r.ID)
	if _, ok := m.simulate("h1", "StartCommand"); ok {
		t.Fatal("a mock with count 0 applied")
	}
	p, _ := m.Configure(SimZone, SimPod, SimCluster, "h1", "PingCommand", "result:fail", nil, "", 0)
	if !m.pingFails("h1") || m.pingFails("h2") {
		t.Fatal("PingCommand result:fail on h1 only")
	}
	if !m.Clear(p.ID) || m.Clear(p.ID) || m.pingFails("h1") {
		t.Fatal("clear")
	}
}
