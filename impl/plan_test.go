package impl_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
)

// userStartFails is a host whose StartCommand for a user VM fails (a failed StartAnswer); routers
// start.
type userStartFails struct{ *sim.Host }

func (h userStartFails) Start(spec impl.DomainSpec) error {
	if spec.Type == "User" {
		return errors.New("libvirt: internal error")
	}
	return h.Host.Start(spec)
}

// A start on a requested host that the first attempt put in the avoid set finds no destination on
// the second: DeploymentPlanningManagerImpl.deployInSpecifiedHostWithoutHA returns null for a
// specified host in the avoid set ("Cannot deploy VM [...] to host [...] because this host is in the
// avoid set.", bhouse-nexthop/cloudstack@6dbaa99490636814dd4746c50336050b52dc23dd,
// server/src/main/java/com/cloud/deploy/DeploymentPlanningManagerImpl.java, the 4.22 branch), and
// orchestrateStart's dest == null then throws, to an admin caller, the CloudRuntimeException with the
// last known error (bhouse-nexthop/cloudstack@017c41e8d1f066cfa950d03c0ed3bdff9d998384,
// VirtualMachineManagerImpl.orchestrateStart and canExposeError), as for any plan that finds no host.
// The reference threw a Host-scoped ResourceUnavailableException of its own instead.
func TestRequestedHostInAvoidSetGivesNoDestination(t *testing.T) {
	w := newSimServer(t, 5, nil, impl.Switches{})
	s, srv := w.s, w.srv
	w.agent(t, "h1", userStartFails{sim.NewHost(s, "h1")})
	n := srv.CreateNetwork("n1", false, 4)
	_, j := srv.DeployVirtualMachine("web1", []int64{n.ID}, "h1")
	var err error
	done := false
	s.Go("client", func() { err = srv.WaitJob(j); done = true })
	require.NoError(t, s.RunUntil(s.Now().Add(10*time.Minute), func() bool { return done }))
	require.True(t, done)
	require.Error(t, err)
	require.Contains(t, err.Error(), "Unable to create a deployment for")
	require.Contains(t, err.Error(), "Last known error")
	require.NotContains(t, err.Error(), "ResourceUnavailableException")
	require.True(t, w.log.has("", "because this host is in the avoid set"))
}
