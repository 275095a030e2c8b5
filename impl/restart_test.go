package impl_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/job"
	"github.com/csconform/csconform/model/vm"
)

// dump is every record the database shows, as JSON.
func dump(t *testing.T, db *impl.DB) string {
	t.Helper()
	all := map[string]any{"vms": db.VMs(nil), "networks": db.Networks(nil), "pool": db.IPPool(1), "volumes": db.Volumes(0),
		"hosts": db.Hosts(), "jobs": db.Jobs(nil), "locks": db.Locks()}
	b, err := json.MarshalIndent(all, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// restartRun deploys a VM, kills the management server in the middle of the VM's stop, and starts a
// new incarnation (same msid), as the simulator's ms-restart does. onFile: the new incarnation reads
// the database from the state file the dead process wrote, instead of sharing the dead one's object.
func restartRun(t *testing.T, onFile bool) (string, *impl.DB) {
	s := sim.NewScheduler(11)
	defer s.Close()
	f := sim.NewFabric(s)
	path := filepath.Join(t.TempDir(), "state.json")
	db := impl.NewDB(s, nil)
	if onFile {
		var err error
		if db, err = impl.OpenDB(s, nil, path); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := impl.NewConfig(map[string]string{"ping.interval": "10"})
	if err != nil {
		t.Fatal(err)
	}
	f.Listen(true)
	srv := impl.NewServer("ms1", s, db, cfg, impl.Switches{}, f)
	srv.Start()
	impl.NewAgent("h1", s, f, sim.NewHost(s, "h1"), nil).Start()
	up := func() bool { h := db.Host("h1"); return h != nil && h.Status == host.Up }
	if err := s.RunUntil(s.Now().Add(time.Minute), up); err != nil || !up() {
		t.Fatalf("h1 not Up (err %v)", err)
	}
	n := srv.CreateNetwork("n1", false, 4)
	v, j := srv.DeployVirtualMachine("", []int64{n.ID}, "h1")
	done := false
	s.Go("client", func() { srv.WaitJob(j); done = true })
	if err := s.RunUntil(s.Now().Add(5*time.Minute), func() bool { return done }); err != nil || db.VM(v.ID).State != vm.Running {
		t.Fatalf("deploy: %v, VM %s", err, db.VM(v.ID).State)
	}
	srv.StopVirtualMachine(v.ID, false)
	if err := s.RunUntil(s.Now().Add(time.Minute), func() bool { return db.VM(v.ID).State == vm.Stopping }); err != nil {
		t.Fatal(err)
	}
	// kill -9: the threads die at their park points, the listener closes
	f.Listen(false)
	s.Kill("ms/")
	if err := s.RunFor(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if len(db.Jobs(func(j *impl.JobVO) bool { return j.Status == job.InProgress })) == 0 {
		t.Fatal("no job in progress at the kill: the test no longer exercises the restart's cleanup")
	}
	if onFile {
		before := dump(t, db)
		if db, err = impl.OpenDB(s, nil, path); err != nil {
			t.Fatal(err)
		}
		if after := dump(t, db); after != before {
			t.Fatalf("the state file lost writes of the killed server:\n%s\n--- loaded\n%s", before, after)
		}
	}
	f.Listen(true)
	srv = impl.NewServer("ms1", s, db, cfg, impl.Switches{}, f)
	srv.Start()
	if err := s.RunFor(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	return dump(t, db), db
}

// A server restarted on the state file behaves as the simulator's restart on the same database: the
// VM deployed before is still there, the stop job the dead incarnation left in progress is cleaned up
// by the new one (same msid), and every record ends the same.
func TestServerRestartOnStateFile(t *testing.T) {
	mem, _ := restartRun(t, false)
	file, db := restartRun(t, true)
	if file != mem {
		t.Fatalf("restart on the state file ends differently:\n%s\n--- shared database\n%s", file, mem)
	}
	vms := db.VMs(func(v *impl.VMVO) bool { return v.Type == "User" })
	if len(vms) != 1 {
		t.Fatalf("VMs after the restart: %+v", vms)
	}
	for _, j := range db.Jobs(nil) {
		if j.Status == job.InProgress {
			t.Errorf("job %d (%s) still in progress after the restart's cleanup", j.ID, j.Cmd)
		}
	}
}
