package harness

import (
	"sync/atomic"
	"time"

	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// clusterSteps is a Cluster's side of the step runner: the simulator's, live and libvirt worlds
// (the server runs in the harness's process: its records and history are at hand).
type clusterSteps struct {
	c       *Cluster
	pending atomic.Int32 // async steps still running
}

var _ stepWorld = (*clusterSteps)(nil)

func (s *clusterSteps) now() time.Time                  { return s.c.Now() }
func (s *clusterSteps) wait(d time.Duration) error      { s.c.Sleep(d); return nil }
func (s *clusterSteps) pause(d time.Duration) error     { s.c.w.pause(d); return nil }
func (s *clusterSteps) untilPoll() time.Duration        { return 50 * time.Millisecond }
func (s *clusterSteps) untilLimit() time.Duration       { return time.Hour }
func (s *clusterSteps) history() []history.Event        { return s.c.Rec.events() }
func (s *clusterSteps) fault(st Step) error             { return faults.Run(s.c, st.faultSpec()) }
func (s *clusterSteps) setConfig(key, val string) error { return s.c.SetConfig(key, val) }
func (s *clusterSteps) ended() error                    { return nil } // the simulator is stopped from outside its tasks

func (s *clusterSteps) async(name string, fn func()) {
	s.pending.Add(1)
	s.c.Go(name, func() { defer s.pending.Add(-1); fn() })
}

func (s *clusterSteps) awaitAsync() {
	for s.pending.Load() > 0 {
		s.c.Sleep(time.Second)
	}
}

// newCase fills the row with the VM's first network (the step's, or its record's) and the network's
// age, so the table says what the cleanup could have raced with.
func (s *clusterSteps) newCase(st Step, client string) CaseResult {
	c := s.c
	cr := CaseResult{Case: st.Case, Op: st.Op, Path: pathOf(st.Op), VM: st.VM, client: client}
	if len(st.Networks) > 0 {
		cr.Network = st.Networks[0]
	} else if id, err := c.VMID(st.VM); err == nil {
		if v := c.DB.VM(id); v != nil && len(v.NetworkIDs) > 0 {
			for _, n := range c.NetworkNames() {
				if nid, _ := c.NetworkID(n); nid == v.NetworkIDs[0] {
					cr.Network = n
				}
			}
		}
	}
	if cr.Network != "" {
		nid, _ := c.NetworkID(cr.Network)
		cr.networkID = nid
		if n := c.DB.Network(nid); n != nil {
			cr.AgeMinutes = int(c.Now().Sub(n.Created).Minutes())
		}
	}
	if st.Server != "" {
		if c.via == nil {
			c.via = map[string]string{}
		}
		c.via[client] = st.Server
	}
	return cr
}

// The operations' failures are outcomes in the history, never errors of the run.
func (s *clusterSteps) createNetwork(client, name string) error {
	_ = s.c.CreateNetwork(client, name, false)
	return nil
}

func (s *clusterSteps) deploy(client string, st Step) error {
	_ = s.c.DeployHA(client, st.VM, st.Networks, st.Host, st.HA)
	return nil
}

func (s *clusterSteps) allocate(client string, st Step) error {
	_ = s.c.Allocate(client, st.VM, st.Networks)
	return nil
}

func (s *clusterSteps) vmOp(client string, st Step) error {
	_ = s.c.VMOp(client, st.Op, st.VM, st.Host)
	return nil
}

func (s *clusterSteps) untilObject(st Step) (obj, instance string, ok bool) {
	c := s.c
	switch st.Until {
	case "start-sent", "running":
		if id, err := c.VMID(st.VM); err == nil {
			return VMObj(id), c.DB.VM(id).Name, true
		}
	case "implementing":
		if id, err := c.NetworkID(st.Network); err == nil {
			return impl.NetworkObject(id), "", true
		}
	case "host-up":
		return impl.HostObject(st.Host), "", true
	}
	return "", "", false
}

// untilHolds reads the records; start-sent is only in the history.
func (s *clusterSteps) untilHolds(st Step) bool {
	c := s.c
	switch st.Until {
	case "running":
		s, ok := c.VMState(st.VM)
		return ok && s == vm.Running
	case "implementing":
		id, err := c.NetworkID(st.Network)
		return err == nil && c.DB.Network(id).State == network.Implementing
	case "host-up":
		h := c.DB.Host(st.Host)
		return h != nil && h.Status == host.Up
	}
	return false
}
