package impl

// The Simulator hypervisor plugin's mocks (apache/cloudstack plugins/hypervisors/simulator), acting
// on the reference's own agents: configureSimulator stores a mockconfiguration row for an agent
// command at zone, pod, cluster or host scope; every command the server sends to a host first looks
// for the host's row (SimulatorManagerImpl.simulate), which may make it wait, fail or throw.
//
// Read at apache/cloudstack 1510b44f038592a1e73ae9aae437bdfc58fb1fdf
// SimulatorManagerImpl.{simulate,configureSimulator,querySimulatorMock,clearSimulatorMock},
// 96988ea6cf739362423ff3a5f75618d43050ab38 MockConfigurationDaoImpl.{findByCommand,findByNameBottomUP},
// d4m14ndx/cloudstack 0bd0bc22c42a5d34cb2d58670ea54d8f1af1531c MockConfigurationVO.getParameters,
// 7b29dd9924d03c62857fe40c5c712487fb9718fa AgentRoutingResource.getCurrentStatus (PingCommand).

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SimMock is one mockconfiguration row. An empty scope field is SQL NULL.
type SimMock struct {
	ID                       int64
	Zone, Pod, Cluster, Host string
	Name                     string // the agent command's simple class name, e.g. StartCommand
	Values                   string // "key:value" pairs separated by | (getParameters)
	Count                    *int   // nil: active until cleaned up; else how many answers are left
	JSONResponse             string
	Removed                  bool
}

// SimMocks is the table. The zero value is empty and ready.
type SimMocks struct {
	mu   sync.Mutex
	rows []*SimMock
}

// Configure is SimulatorManagerImpl.configureSimulator: the row of exactly this scope and name
// (findByCommand) gets the new values, count and response; else a new row. It returns the row.
// max, when above 0, bounds the live rows: a new row beyond it is refused (ok false), an update never.
func (t *SimMocks) Configure(zone, pod, cluster, host, name, values string, count *int, jsonResponse string, max int) (m SimMock, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	live := 0
	for _, r := range t.rows {
		if r.Removed {
			continue
		}
		if r.Name == name && r.sameScope(zone, pod, cluster, host) {
			r.Values, r.Count, r.JSONResponse = values, count, jsonResponse
			return r.copy(), true
		}
		live++
	}
	if max > 0 && live >= max {
		return SimMock{}, false
	}
	r := &SimMock{ID: int64(len(t.rows) + 1), Zone: zone, Pod: pod, Cluster: cluster, Host: host, Name: name,
		Values: values, Count: count, JSONResponse: jsonResponse}
	t.rows = append(t.rows, r)
	return r.copy(), true
}

// sameScope is findByCommand's search: the first NULL field makes the rest NULL too (a zone-less
// search is the global row whatever else was given).
func (r *SimMock) sameScope(zone, pod, cluster, host string) bool {
	switch {
	case zone == "":
		return r.Zone == "" && r.Pod == "" && r.Cluster == "" && r.Host == ""
	case pod == "":
		return r.Zone == zone && r.Pod == "" && r.Cluster == "" && r.Host == ""
	case cluster == "":
		return r.Zone == zone && r.Pod == pod && r.Cluster == "" && r.Host == ""
	case host == "":
		return r.Zone == zone && r.Pod == pod && r.Cluster == cluster && r.Host == ""
	}
	return r.Zone == zone && r.Pod == pod && r.Cluster == cluster && r.Host == host
}

func (r *SimMock) copy() SimMock {
	c := *r
	if r.Count != nil {
		n := *r.Count
		c.Count = &n
	}
	return c
}

// Query is querySimulatorMock: a row not removed (GenericDaoBase.findById skips removed rows).
func (t *SimMocks) Query(id int64) (SimMock, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id < 1 || id > int64(len(t.rows)) || t.rows[id-1].Removed {
		return SimMock{}, false
	}
	return t.rows[id-1].copy(), true
}

// Clear is clearSimulatorMock: the row is marked removed; false if there is none to remove.
func (t *SimMocks) Clear(id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id < 1 || id > int64(len(t.rows)) || t.rows[id-1].Removed {
		return false
	}
	t.rows[id-1].Removed = true
	return true
}

// Active are the rows not removed, oldest first.
func (t *SimMocks) Active() []SimMock {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []SimMock
	for _, r := range t.rows {
		if !r.Removed {
			out = append(out, r.copy())
		}
	}
	return out
}

// The reference has one zone, pod and cluster; the API face shows them by these keys.
const (
	SimZone    = "zone1"
	SimPod     = "pod1"
	SimCluster = "cluster1"
)

// lookup is findByNameBottomUP for a host of the one cluster: the oldest row not removed whose
// scope holds the host — host, cluster, pod, zone or global (ORDER BY id ASC LIMIT 1, not the most
// specific). A row whose scope skips a level (a host without its cluster) matches no clause of the
// query, so it never applies.
func (t *SimMocks) lookup(host, name string) *SimMock {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.rows {
		if !r.Removed && r.Name == name && r.holds(host) {
			return r
		}
	}
	return nil
}

func (r *SimMock) holds(host string) bool {
	switch {
	case r.Zone == "" && r.Pod == "" && r.Cluster == "" && r.Host == "":
		return true
	case r.Zone != SimZone:
		return false
	case r.Pod == "" && r.Cluster == "" && r.Host == "":
		return true
	case r.Pod != SimPod:
		return false
	case r.Cluster == "" && r.Host == "":
		return true
	case r.Cluster != SimCluster:
		return false
	}
	return r.Host == "" || r.Host == host
}

// mockEffect is what a mock does to one command: wait first, then fail (an Answer with result
// false and these details) or run as usual.
type mockEffect struct {
	id     int64
	wait   time.Duration
	fail   bool
	detail string
	count  bool // an answer comes back: a counted mock is used up by one
}

// simulate reads the host's mock for a command, as simulate does before dispatching it. A value
// without ':' throws in getParameters; simulate's catch answers it as a failure.
func (t *SimMocks) simulate(host, name string) (mockEffect, bool) {
	r := t.lookup(host, name)
	if r == nil {
		return mockEffect{}, false
	}
	t.mu.Lock()
	values, used := r.Values, r.Count != nil && *r.Count <= 0
	t.mu.Unlock()
	if used { // simulate's check: count null or above 0
		return mockEffect{}, false
	}
	e := mockEffect{id: r.ID, count: true}
	if values == "" {
		// getParameters splits "" into one entry without a value: ArrayIndexOutOfBoundsException
		return mockEffect{id: r.ID, fail: true, detail: "java.lang.ArrayIndexOutOfBoundsException: Index 1 out of bounds for length 1"}, true
	}
	for _, kv := range strings.Split(values, "|") {
		k, v, ok := strings.Cut(kv, ":")
		if !ok {
			return mockEffect{id: r.ID, fail: true, detail: "java.lang.ArrayIndexOutOfBoundsException: Index 1 out of bounds for length 1"}, true
		}
		v, _, _ = strings.Cut(v, ":") // split(":")[1]
		switch {
		case strings.EqualFold(k, "wait"):
			// Integer.valueOf; an invalid number is logged and ignored
			if ms, err := strconv.Atoi(v); err == nil && ms > 0 {
				e.wait = time.Duration(ms) * time.Millisecond
			}
		case strings.EqualFold(k, "result") && strings.EqualFold(v, "fail"):
			e.fail, e.detail = true, "Simulated failure"
		case strings.EqualFold(k, "result") && strings.EqualFold(v, "fault"):
			// thrown, caught by simulate: Answer(cmd, false, e.toString()), and the count is not used
			e.fail, e.detail, e.count = true, "java.lang.Exception: Simulated fault", false
		}
	}
	return e, true
}

// used takes one from a counted mock after it answered (simulate's decrement).
func (t *SimMocks) used(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id >= 1 && id <= int64(len(t.rows)) {
		if r := t.rows[id-1]; r.Count != nil && *r.Count > 0 {
			*r.Count--
		}
	}
}

// pingFails is AgentRoutingResource.getCurrentStatus: a PingCommand mock with result:fail makes the
// agent's status null, so no ping reaches the server (DirectAgentAttache.PingTask gives up).
func (t *SimMocks) pingFails(host string) bool {
	r := t.lookup(host, "PingCommand")
	if r == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, kv := range strings.Split(r.Values, "|") {
		if k, v, ok := strings.Cut(kv, ":"); ok && strings.EqualFold(k, "result") && strings.EqualFold(v, "fail") {
			return true
		}
	}
	return false
}

func (e mockEffect) String() string {
	return fmt.Sprintf("mock %d: wait %s, fail %v", e.id, e.wait, e.fail)
}
