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
