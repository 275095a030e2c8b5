package impl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/host"
)

// simServer is a management server on the simulator, listening for agents, its history in log.
type simServer struct {
	s   *sim.Scheduler
	f   *sim.Fabric
	db  *impl.DB
	log *eventLog
	cfg *impl.Config
	srv *impl.Server
}

func newSimServer(t *testing.T, seed uint64, overrides map[string]string, sw impl.Switches) *simServer {
	t.Helper()
	return newSimServerWith(t, sim.NewScheduler(seed), overrides, sw)
}

// newSimServerPCT is newSimServer on a scheduler with the PCT strategy (sim.DefaultPCTDepth), whose
// scheduling points can preempt a task for another runnable at the same instant.
func newSimServerPCT(t *testing.T, seed uint64, overrides map[string]string, sw impl.Switches) *simServer {
	t.Helper()
	s := sim.NewScheduler(seed)
	s.UseStrategy(sim.Strategy{Kind: sim.PCT})
	return newSimServerWith(t, s, overrides, sw)
}

func newSimServerWith(t *testing.T, s *sim.Scheduler, overrides map[string]string, sw impl.Switches) *simServer {
	t.Helper()
	w := &simServer{s: s, log: &eventLog{}}
	t.Cleanup(w.s.Close)
	w.f = sim.NewFabric(w.s)
	w.db = impl.NewDB(w.s, w.log)
	var err error
	w.cfg, err = impl.NewConfig(overrides)
	require.NoError(t, err)
	w.f.Listen(true)
	w.srv = impl.NewServer("ms1", w.s, w.db, w.cfg, sw, w.f)
	w.srv.Start()
	return w
}

// up says whether the host's row says Up.
func (w *simServer) up(id string) bool { h := w.db.Host(id); return h != nil && h.Status == host.Up }

// agent starts host id's agent on hv and waits (a minute at most) for the host to be Up.
func (w *simServer) agent(t *testing.T, id string, hv impl.Hypervisor) *impl.Agent {
	t.Helper()
	a := impl.NewAgent(id, w.s, w.f, hv, nil)
	a.Start()
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(time.Minute), func() bool { return w.up(id) }))
	require.True(t, w.up(id), "%s not Up", id)
	return a
}
