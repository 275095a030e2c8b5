package impl

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/vm"
)

// pointEnv is clockEnv that records the scheduling points it is given (a Preempter, as the
// simulator's PCT scheduler is).
type pointEnv struct {
	clockEnv
	points *[]PointKind
}

func (e pointEnv) Go(string, func()) {}
func (e pointEnv) Point(k PointKind) { *e.points = append(*e.points, k) }

// TestPowerReportPointsAreItsQueries pins where a power report can be preempted: at each of its
// database calls, as in VirtualMachinePowerStateSyncImpl.processReport. convertVmStateReport's
// findVMByInstanceName (a read) and updatePowerState (a write) for each reported VM, then
// findByHostInStates(hostId, Running, Stopping, Starting) (a read) for the VMs missing from the
// report. The last read is where a start that lands between the report's updates and its missing-VM
// query is seen; a listing without its point (as the host index's first version had) hides that
// interleaving from PCT.
func TestPowerReportPointsAreItsQueries(t *testing.T) {
	var points []PointKind
	env := pointEnv{points: &points}
	db := NewDB(env, nil)
	db.hosts["h1"] = &HostVO{ID: "h1", Status: host.Up}
	cfg, err := NewConfig(nil)
	require.NoError(t, err)
	s := NewServer("ms1", env, db, cfg, allDefects(false), nil)
	v := db.CreateVM("api", "web1", "User", nil)
	row := db.vms[v.ID]
	// Running on h1 and reported three times already: this report writes nothing and publishes nothing
	row.State, row.HostID, row.PowerState, row.PowerHost, row.PowerStateUpdateCount = vm.Running, "h1", vm.PowerOn, "h1", 3
	row.UpdateTime = env.Now().Add(-time.Hour)
	row.PowerStateUpdateTime = env.Now().Add(-time.Hour)
	db.reindex()
	points = nil

	s.processHostVmStateReport(&Thread{Name: "t"}, "h1", []string{"web1"}, time.Time{}, false)
	require.Equal(t, []PointKind{PointRead, PointWrite, PointRead}, points,
		"findVMByInstanceName, updatePowerState, findByHostInStates")
}

// TestReportLineFollowsItsArguments: the memoised log line of a host's report is the line Log would
// have formatted, whatever the record count and force flag of the report before it.
func TestReportLineFollowsItsArguments(t *testing.T) {
	m := &reportMemo{}
	for _, c := range []struct {
		n     int
		force bool
	}{{20, false}, {20, false}, {19, false}, {19, true}, {19, false}, {0, false}, {20, true}} {
		want := fmt.Sprintf("Process VM state report. host: %s, number of records in report: %d, force: %v", "h7", c.n, c.force)
		if got := m.line("h7", c.n, c.force); got != want {
			t.Fatalf("line(%d, %v) = %q, want %q", c.n, c.force, got, want)
		}
	}
}
