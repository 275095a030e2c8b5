package impl_test

import (
	"testing"
	"time"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/host"
	"github.com/stretchr/testify/require"
)

// A request goes to the host's attache whatever the host row's status says. ClusteredAgentManagerImpl
// .getAttache (apache@002a9ef8) refuses only a host with no attache ("Host with specified id is not in
// the right state: " + status; a host another server owns gets a forwarding attache), AgentManagerImpl
// .send only a closed one ("agent not logged into this management server"), and AgentAttache.send
// checks nothing but maintenance mode. The attache goes when the host is disconnected
// (handleDisconnectWithoutInvestigation's removeAgent), not when its row moves: a row moved to Alert
// behind a live connection still gets the command through. With no attache, the status is the error.
func TestSendGoesThroughALiveAttacheWhateverTheHostStatus(t *testing.T) {
	w := newSimServer(t, 3, nil, impl.Switches{})
	w.agent(t, "h1", sim.NewHost(w.s, "h1"))
	st, ok := w.db.HostTransit("test", "h1", host.AgentDisconnected, "")
	require.True(t, ok)
	require.Equal(t, host.Alert, st)

	var ans *impl.Message
	var err error
	done := false
	w.srv.SendForTest("HA-Worker-0", "h1", impl.Message{Kind: impl.MsgCheckVM, VMName: "i-2-9-VM"}, &ans, &err, &done)
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(time.Minute), func() bool { return done }))
	require.NoError(t, err, "the live attache carries the command")
	require.NotNil(t, ans)

	done = false
	w.srv.SendForTest("HA-Worker-1", "h2", impl.Message{Kind: impl.MsgCheckVM, VMName: "i-2-9-VM"}, &ans, &err, &done)
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(time.Minute), func() bool { return done }))
	require.Error(t, err, "no attache, no host")
}
