package impl

import (
	"bytes"
	"testing"
)

// FuzzLoadDB: whatever a state file and its log hold, loading never panics, and a database it
// accepts is one the server can run on: every NIC can take and give back an address, a new row gets
// an id no row has, and it saves and loads again as itself. Seeds under testdata/fuzz/FuzzLoadDB.
//
//	go test ./impl -run '^$' -fuzz FuzzLoadDB -fuzztime 30s -fuzzminimizetime 2s
//
// (a short minimize time: minimizing the populated seeds otherwise stalls a short run)
func FuzzLoadDB(f *testing.F) {
	f.Fuzz(func(t *testing.T, snap, log []byte) {
		if len(snap) == 0 {
			snap = nil // no state file
		}
		if len(log) == 0 {
			log = nil
		}
		db := NewDB(newClock(), nil)
		if _, err := db.load(snap, log); err != nil {
			if bytes.ContainsRune([]byte(err.Error()), '\n') {
				t.Fatalf("a multi-line error: %q", err)
			}
			return
		}
		saved, err := db.encode()
		if err != nil {
			t.Fatal(err)
		}
		again := NewDB(newClock(), nil)
		if _, err := again.load(saved, nil); err != nil {
			t.Fatalf("the loaded database does not load again: %v", err)
		}
		if b, _ := again.encode(); !bytes.Equal(b, saved) {
			t.Fatalf("loaded again, it differs:\n%s\n---\n%s", saved, b)
		}
		for _, v := range db.VMs(nil) {
			for _, nic := range db.Nics(v.ID) {
				db.ReserveIP("ms1", nic.ID)
				db.ChangeActiveNicsBy(nic.NetworkID, 1)
				db.ReleaseIP("ms1", nic.ID)
				db.IPPool(nic.NetworkID)
			}
		}
		before := len(db.VMs(nil))
		v := db.CreateVM("api", "", "User", nil)
		db.CreateJob("api", "StartVM", "VirtualMachine", v.ID, "ms1")
		if len(db.VMs(nil)) != before+1 {
			t.Fatalf("a new VM (id %d) replaced a row", v.ID)
		}
	})
}
