package impl

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/model/vm"
)

// TestIndexedLookupsMatchScans: every indexed lookup answers what a scan of the table in id order answers, in
// memory and after the state file is loaded again (the indexes are rebuilt from the rows).
func TestIndexedLookupsMatchScans(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	db, err := OpenDB(newClock(), nil, path)
	require.NoError(t, err)
	n1 := db.CreateNetwork("t", "n1", false, 4)
	n2 := db.CreateNetwork("t", "n2", false, 4)
	var vms []*VMVO
	for i := range 12 {
		name := "" // generated names are unique; a few share one, as a re-created instance does
		if i%4 == 0 {
			name = "dup"
		}
		nets := []int64{n1.ID}
		if i%3 == 0 {
			nets = append(nets, n2.ID)
		}
		v := db.CreateVM("t", name, "User", nets)
		vms = append(vms, v)
		db.CreateNic(v.ID, n1.ID)
		db.CreateVolume("t", v.ID)
		db.CreateJob("t", "VmWorkStart", "VirtualMachine", v.ID, "ms1")
	}
	hosts := []string{"h1", "h2", "h3"}
	for i, v := range vms {
		require.True(t, db.UpdateVMState("t", v, vm.StartRequested, vm.Starting, hosts[i%3]))
		if i%2 == 0 { // moves on, then off its host
			require.True(t, db.UpdateVMState("t", v, vm.OperationSucceeded, vm.Running, hosts[(i+1)%3]))
		}
		if i%5 == 0 {
			require.True(t, db.UpdateVMState("t", v, vm.OperationFailed, vm.Stopped, ""))
		}
	}
	db.RemoveVM("t", vms[0].ID)
	for _, n := range db.Nics(vms[3].ID) {
		db.RemoveNic(n.ID)
	}
	db.CreateJob("t", "DeleteNetwork", "Network", n2.ID, "ms1")

	check := func(t *testing.T, db *DB) {
		for id, v := range db.vms { // the dense index holds the table's rows themselves
			r, ok := db.vmRow(id)
			require.True(t, ok, id)
			require.Same(t, v, r, id)
		}
		for id := range db.nextID + 2 {
			if _, isVM := db.vms[id]; !isVM {
				_, ok := db.vmRow(id)
				require.False(t, ok, id)
			}
		}
		all := db.VMs(nil)
		require.True(t, slices.IsSortedFunc(all, func(a, b *VMVO) int { return int(a.ID - b.ID) }))
		for _, name := range []string{"dup", vms[1].Name, "nope"} {
			var first, last *VMVO
			for _, v := range all {
				if v.Name == name {
					last = v
					if first == nil && !v.Removed {
						first = v
					}
				}
			}
			require.Equal(t, first, db.VMByName(name), name)
			id, ok := db.VMIDByName(name)
			require.Equal(t, first != nil, ok, name)
			if first != nil {
				require.Equal(t, first.ID, id, name)
			}
			var h NameHint
			for range 2 { // filled, then answering from the hint
				hid, hok := db.VMIDByNameHinted(name, &h)
				require.Equal(t, ok, hok, name)
				require.Equal(t, id, hid, name)
			}
			require.Equal(t, last, db.VMByNameAny(name), name)
		}
		for _, h := range append(hosts, "") {
			require.Equal(t, db.VMs(func(v *VMVO) bool { return v.HostID == h && h != "" }), db.VMsOnHost(h, nil), h)
		}
		for _, n := range []int64{n1.ID, n2.ID} {
			require.Equal(t, db.VMs(func(v *VMVO) bool { return slices.Contains(v.NetworkIDs, n) }), db.VMsInNetwork(n, nil))
			require.Equal(t, db.Jobs(func(j *JobVO) bool { return j.InstanceType == "Network" && j.InstanceID == n }), db.JobsFor("Network", n, nil))
		}
		for _, v := range all {
			var nics []*NicVO
			for _, id := range slices.Sorted(maps.Keys(db.nics)) {
				if db.nics[id].VMID == v.ID {
					c := *db.nics[id]
					nics = append(nics, &c)
				}
			}
			require.Equal(t, nics, db.Nics(v.ID))
			require.Equal(t, db.Jobs(func(j *JobVO) bool { return j.InstanceType == "VirtualMachine" && j.InstanceID == v.ID }), db.JobsFor("VirtualMachine", v.ID, nil))
			vols := db.Volumes(v.ID)
			require.Len(t, vols, 1)
			require.Equal(t, v.ID, vols[0].VMID)
		}
		require.Len(t, db.Volumes(0), len(all))
	}
	t.Run("memory", func(t *testing.T) { check(t, db) })
	db.Detach()
	back, err := OpenDB(newClock(), nil, path)
	require.NoError(t, err)
	t.Run("reloaded", func(t *testing.T) { check(t, back) })
}

// TestNameHintFollowsLiveNames: a hint answers what VMIDByName answers now, not what it answered when
// filled: after the VM is removed, after another VM takes the name, after a reload, and when asked for
// another name.
func TestNameHintFollowsLiveNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	db, err := OpenDB(newClock(), nil, path)
	require.NoError(t, err)
	n := db.CreateNetwork("t", "n", false, 4)
	a := db.CreateVM("t", "a", "User", []int64{n.ID})
	b := db.CreateVM("t", "b", "User", []int64{n.ID})
	var h NameHint
	same := func(name string) {
		t.Helper()
		id, ok := db.VMIDByName(name)
		hid, hok := db.VMIDByNameHinted(name, &h)
		require.Equal(t, ok, hok, name)
		require.Equal(t, id, hid, name)
	}
	same("a")
	same("a")
	require.Equal(t, a.ID, h.id)
	same("b") // another name through the same hint
	same("a")
	db.RemoveVM("t", a.ID)
	same("a")
	require.False(t, h.ok, "a removed VM's name is not live")
	a2 := db.CreateVM("t", "a", "User", []int64{n.ID})
	same("a")
	require.Equal(t, a2.ID, h.id)
	db.RemoveVM("t", b.ID)
	same("b")
	db.Detach()
	back, err := OpenDB(newClock(), nil, path)
	require.NoError(t, err)
	db = back
	same("a") // a hint from before the reload
	same("b")
	same("nope")

	// two DBs at the same generation: one without a live "x", one with
	one, two := NewDB(newClock(), nil), NewDB(newClock(), nil)
	one.RemoveVM("t", one.CreateVM("t", "x", "User", nil).ID)
	two.CreateVM("t", "y", "User", nil)
	x := two.CreateVM("t", "x", "User", nil)
	require.Equal(t, one.liveGen, two.liveGen)
	h = NameHint{}
	_, ok := one.VMIDByNameHinted("x", &h)
	require.False(t, ok)
	id, ok := two.VMIDByNameHinted("x", &h)
	require.True(t, ok, "a hint filled by another DB")
	require.Equal(t, x.ID, id)
}

// TestVMRowsAboveTheDenseIndex: a row whose id is past the dense index (a state file may hold any id)
// is still found, listed and updated.
func TestVMRowsAboveTheDenseIndex(t *testing.T) {
	db := NewDB(newClock(), nil)
	low := db.CreateVM("t", "low", "User", nil)
	db.nextID = maxDenseVMID + 10
	high := db.CreateVM("t", "high", "User", nil)
	require.Greater(t, high.ID, int64(maxDenseVMID))
	require.Less(t, len(db.ix.vmRows), maxDenseVMID+1)
	for _, v := range []*VMVO{low, high} {
		require.Equal(t, v.Name, db.VM(v.ID).Name)
		require.True(t, db.UpdateVMState("t", db.VM(v.ID), vm.StartRequested, vm.Starting, "h1"))
	}
	require.Len(t, db.VMsOnHost("h1", nil), 2)
	_, ok := db.vmRow(high.ID + 1)
	require.False(t, ok)
}
