package cloudapi

import (
	"strconv"
	"testing"

	"github.com/csconform/csconform/model/host"
)

// An unknown UUID costs a map look-up, not a pass over the table: queryAsyncJobResult with a jobid
// nobody made used to hash every job's UUID under the map's mutex at every request. Rows created
// since the last miss are hashed once (so a UUID made by an earlier incarnation is still found), and
// a miss with no new rows hashes nothing. The work is counted (idMap.hashed), not timed.
func TestUnknownUUIDHashesNoRowTwice(t *testing.T) {
	f := newFixture(t)
	db := f.srv.DB
	const n = 500
	net := db.CreateNetwork("api", "n1", false, 4)
	v := db.CreateVM("api", "v1", "User", []int64{net.ID})
	for i := 0; i < n; i++ {
		db.CreateJob("api", "VmWorkStart", "VirtualMachine", v.ID, "ms1")
	}
	db.HostTransit("test", "h1", host.AgentConnected, "ms1")
	misses := [][2]string{
		{"queryAsyncJobResult", "jobid"},
		{"startVirtualMachine", "id"},
		{"deleteNetwork", "id"},
		{"deployVirtualMachine", "hostid"},
	}
	miss := func() {
		for _, m := range misses {
			code, _ := raw(t, f.url, signed(m[0], testCreds.SecretKey, m[1], UUID("nothing", "7"), "zoneid", f.zone(t),
				"serviceofferingid", f.h.offeringID(), "templateid", f.h.templateID(), "networkids", f.h.ids.id("network", net.ID)))
			if code != ErrParam {
				t.Fatalf("%s with an unknown %s: HTTP %d, want %d", m[0], m[1], code, ErrParam)
			}
		}
	}
	miss() // catches up with the rows made directly in the database
	first := f.h.ids.hashed.Load()
	if first > 2*n+20 {
		t.Fatalf("the first miss hashed %d UUIDs for %d rows", first, n+2)
	}
	for i := 0; i < 20; i++ {
		miss()
	}
	if d := f.h.ids.hashed.Load() - first; d != 0 {
		t.Fatalf("20 rounds of misses with no new rows hashed %d UUIDs (want 0: a miss is a map look-up)", d)
	}
	// a UUID of a row created since (never shown) is still found
	j := db.CreateJob("api", "VmWorkStart", "VirtualMachine", v.ID, "ms1")
	if code, body := raw(t, f.url, signed("queryAsyncJobResult", testCreds.SecretKey, "jobid", UUID("job", strconv.FormatInt(j.ID, 10)))); code != 200 {
		t.Fatalf("a new job's UUID: HTTP %d %v", code, body)
	}
	if d := f.h.ids.hashed.Load() - first; d > 3 {
		t.Fatalf("finding one new job hashed %d UUIDs", d)
	}
}
