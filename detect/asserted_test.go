package detect

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/model/invariant"
)

// The twin is frozen while the asserted domain runs, whichever host the checker looks at first, and
// the exemption ends (the VM is observed anew) only when both have stopped.
func TestTwinOfAnAssertedDomainIsFrozenUntilItStops(t *testing.T) {
	dom := func(h string, running bool) []invariant.Domain {
		return []invariant.Domain{{HostID: h, Name: "i-2-3-VM", Running: running, IPs: []string{"10.1.1.11"}}}
	}
	var a AssertedStops
	a.ForceStopBegins("3", "i-2-3-VM")
	assert.Equal(t, []string{"h1"}, a.End("i-2-3-VM", dom("h1", true)), "the forced stop left h1's domain running")
	got := a.Filter(map[string]bool{"h2": true}, dom("h2", true))
	assert.True(t, got[0].Asserted, "the twin on h2 runs beside the asserted domain on h1")
	assert.Nil(t, got[0].IPs)
	a.Filter(map[string]bool{"h1": true}, dom("h1", false)) // h1's domain stops
	assert.Empty(t, a.TakeEnded(), "the twin still runs: the VM stays the operator's")
	got = a.Filter(map[string]bool{"h2": true}, dom("h2", true))
	assert.True(t, got[0].Asserted)
	a.Filter(map[string]bool{"h2": true}, dom("h2", false))
	assert.Equal(t, []string{"3"}, a.TakeEnded(), "both stopped: the VM is the server's again")
	got = a.Filter(nil, dom("h2", true)) // started again afterwards: checked as any domain
	assert.False(t, got[0].Asserted)
}

// A domain on a host an operator is removing is the operator's; a migration hands the assertion of a
// VM that is the operator's to the guest it moves, and takes none of one that is not.
func TestAssertedStops(t *testing.T) {
	d := func(h, name string) []invariant.Domain {
		return []invariant.Domain{{HostID: h, Name: name, Running: true, IPs: []string{"10.1.1.12"}}}
	}
	var a AssertedStops
	assert.False(t, a.Filter(nil, d("h1", "r-8-VM"))[0].Asserted, "nothing asserted yet")
	a.HostRemovalBegins("h1")
	got := a.Filter(nil, d("h1", "r-8-VM"))
	assert.True(t, got[0].Asserted, "a domain that runs on a removed host is the operator's")
	assert.Nil(t, got[0].IPs)
	assert.False(t, a.Filter(map[string]bool{"h2": true}, d("h2", "i-2-4-VM"))[0].Asserted, "another host's domain is the server's")

	assert.False(t, a.MigrateBegins("i-2-4-VM"), "a VM that is not the operator's keeps its checks through a migration")
	assert.True(t, a.MigrateBegins("r-8-VM"))
	assert.True(t, a.Exempt("r-8-VM"))
	assert.Equal(t, []string{"h3"}, a.End("r-8-VM", d("h3", "r-8-VM")), "the destination's domain stays the operator's")
	assert.True(t, a.Filter(map[string]bool{"h3": true}, d("h3", "r-8-VM"))[0].Asserted)
}
