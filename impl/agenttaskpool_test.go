package impl_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/host"
)

// TestDisconnectTasksRunOnTheAgentTaskPool pins where a disconnect's investigation runs.
// AgentManagerImpl (apache/cloudstack@44d54b35, engine/orchestration/src/main/java/com/cloud/agent/
// manager/AgentManagerImpl.java): configure makes _executor, a ThreadPoolExecutor of
// DirectAgentLoadSize (direct.agent.load.size, 16) threads named AgentTaskPool over an unbounded
// LinkedBlockingQueue, and disconnectWithInvestigation submits a DisconnectTask to it. So when more
// agents go away at once than the pool has threads, the investigations beyond 16 wait for a thread.
func TestDisconnectTasksRunOnTheAgentTaskPool(t *testing.T) {
	cases := []struct {
		name     string
		hosts    int
		poolSize string
		want     int // investigations at once, at most
	}{
		{"18 hosts, default pool", 18, "16", 16},
		{"6 hosts, pool of 4", 6, "4", 4},
		{"3 hosts, default pool", 3, "16", 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newSimServer(t, 1, map[string]string{"direct.agent.load.size": c.poolSize}, impl.Switches{})
			var agents []*impl.Agent
			for i := 1; i <= c.hosts; i++ {
				id := fmt.Sprintf("h%d", i)
				agents = append(agents, w.agent(t, id, sim.NewHost(w.s, id)))
			}
			active, most, done := 0, 0, 0
			w.srv.SetInvestigateForTest(func(string) host.Status {
				active++
				most = max(most, active)
				w.s.Sleep(time.Minute) // CheckHealthCommand and the investigators take their time
				active--
				done++
				return host.Down
			})
			for _, a := range agents {
				a.Kill()
			}
			require.NoError(t, w.s.RunUntil(w.s.Now().Add(15*time.Minute), func() bool { return done == c.hosts }))
			require.Equal(t, c.hosts, done, "every host investigated")
			require.Equal(t, c.want, most, "investigations at once")
		})
	}
}
