package live

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
)

// FakeHost.MigrateTo, as drivers/sim.Host's: the domain comes to run on the destination and then
// stops on the source (STOPPED/MIGRATED there); an unknown destination or a domain not running here
// fails it and leaves the domain where it was.
func TestFakeHostMigrateTo(t *testing.T) {
	env := NewEnv()
	defer env.Close()
	hosts := map[string]*FakeHost{}
	for _, id := range []string{"h1", "h2"} {
		h := NewFakeHost(env, id)
		h.Peers = func(id string) *FakeHost { return hosts[id] }
		hosts[id] = h
	}
	var stopped []string
	hosts["h1"].Subscribe(func(ev impl.LifecycleEvent) {
		if ev.Event == "STOPPED" {
			stopped = append(stopped, ev.Detail)
		}
	})
	const vm = "i-2-1-VM"
	require.NoError(t, hosts["h1"].Start(impl.DomainSpec{Name: vm}))
	require.ErrorContains(t, hosts["h1"].MigrateTo(vm, "h9"), "unable to connect")
	require.ErrorContains(t, hosts["h1"].MigrateTo("i-2-9-VM", "h2"), "Domain not found")
	require.Equal(t, []string{vm}, hosts["h1"].Running())
	require.NoError(t, hosts["h1"].MigrateTo(vm, "h2"))
	require.Empty(t, hosts["h1"].Running())
	require.Equal(t, []string{vm}, hosts["h2"].Running())
	require.True(t, slices.Equal(stopped, []string{"MIGRATED"}), "the source's domain stops as migrated: %v", stopped)
}
