package impl

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/vm"
)

// TestUpdateVMStateAsTheDAODoes pins DB.UpdateVMState to VMInstanceDaoImpl.updateState(State oldState,
// Event event, State newState, VirtualMachine vm, Object opaque), read at
// bhouse-nexthop/cloudstack@15eb2bcd20001199502bff3cd700b255ca4853ce (the 4.22 branch fork) and
// apache/cloudstack@8682179a2e185a55a1bdc0bd3c992d1ff9778c2c, same logic in both, path
// engine/schema/src/main/java/com/cloud/vm/dao/VMInstanceDaoImpl.java:
//
//   - same state and the same non-null host, or Stopped to Stopped with neither host set
//     (ifStateUnchanged): true, nothing read or written, the VO untouched;
//   - else the WHERE binds id, state = oldState, host_id = the VO's host, updated = the VO's count;
//     incrUpdated and the UpdateBuilder's sets (state, host_id, pod, update_time) land on the VO
//     itself before the UPDATE runs, so the caller's copy holds the new values whatever happens;
//   - on zero rows it re-reads the row (findByIdIncludingRemoved), logs "Unable to update …" and
//     returns true when the row's state alone equals newState (the host is not compared), else false.
//
// Each case reads the caller's copy, lets another writer act (or not), then runs the transition on it.
func TestUpdateVMStateAsTheDAODoes(t *testing.T) {
	type want struct {
		ok        bool
		state     vm.State // the row's, after
		host      string
		count     int64
		copy      VMVO // State, HostID, LastHostID, UpdateCount of the caller's copy after
		writes    int  // State events the transition wrote (0 or 1)
		unable    bool // an "Unable to update" line
		matched   bool // the "already been updated" line
		untouched bool // the copy is exactly as read
	}
	// start takes the VM to Starting on h1 from a fresh copy (count 1).
	start := func(t *testing.T, db *DB, id int64) {
		require.True(t, db.UpdateVMState("other", db.VM(id), vm.StartRequested, vm.Starting, "h1"))
	}
	cases := []struct {
		name   string
		before func(t *testing.T, db *DB, id int64) // before the copy is read
		during func(t *testing.T, db *DB, id int64) // after it is read, before its transition
		ev     vm.Event
		to     vm.State
		host   string
		want   want
	}{
		{
			name: "alone: written, the copy takes the new values",
			ev:   vm.StartRequested, to: vm.Starting, host: "h1",
			want: want{ok: true, state: vm.Starting, host: "h1", count: 1, writes: 1,
				copy: VMVO{State: vm.Starting, HostID: "h1", UpdateCount: 1}},
		},
		{
			name:   "a concurrent transition to the same state: both win, one write",
			during: start,
			ev:     vm.StartRequested, to: vm.Starting, host: "h1",
			want: want{ok: true, state: vm.Starting, host: "h1", count: 1, unable: true, matched: true,
				copy: VMVO{State: vm.Starting, HostID: "h1", UpdateCount: 1}},
		},
		{
			name:   "the same state on another host: wins, the row keeps its host (state alone is compared)",
			during: start,
			ev:     vm.StartRequested, to: vm.Starting, host: "h2",
			want: want{ok: true, state: vm.Starting, host: "h1", count: 1, unable: true, matched: true,
				copy: VMVO{State: vm.Starting, HostID: "h2", UpdateCount: 1}},
		},
		{
			name:   "a stale transition to a different state: false, the copy holds what it tried",
			before: start,
			during: func(t *testing.T, db *DB, id int64) {
				require.True(t, db.UpdateVMState("other", db.VM(id), vm.OperationSucceeded, vm.Running, "h1"))
			},
			ev: vm.OperationFailed, to: vm.Stopped, host: "",
			want: want{ok: false, state: vm.Running, host: "h1", count: 2, unable: true,
				copy: VMVO{State: vm.Stopped, HostID: "", LastHostID: "h1", UpdateCount: 2}},
		},
		{
			name:   "same state and host: true, nothing written, the copy untouched",
			before: start,
			ev:     vm.OperationRetry, to: vm.Starting, host: "h1",
			want: want{ok: true, state: vm.Starting, host: "h1", count: 1, untouched: true},
		},
		{
			name:   "Stopped to Stopped with no host (ifStateUnchanged): true without looking at the row, which has moved on",
			during: start,
			ev:     vm.FollowAgentPowerOffReport, to: vm.Stopped, host: "",
			want: want{ok: true, state: vm.Starting, host: "h1", count: 1, untouched: true},
		},
		{
			name:   "a column the transition does not guard moved: written, the copy not refreshed",
			before: start,
			during: func(t *testing.T, db *DB, id int64) {
				require.True(t, db.UpdatePowerState("other", id, vm.PowerOn, "h1", db.env.Now()))
			},
			ev: vm.OperationSucceeded, to: vm.Running, host: "h1",
			want: want{ok: true, state: vm.Running, host: "h1", count: 2, writes: 1,
				copy: VMVO{State: vm.Running, HostID: "h1", LastHostID: "h1", UpdateCount: 2}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var events logEvents
			db := NewDB(newClock(), &events)
			id := db.CreateVM("api", "web1", "User", nil).ID
			if c.before != nil {
				c.before(t, db, id)
			}
			v := db.VM(id)
			read := *v
			if c.during != nil {
				c.during(t, db, id)
			}
			events = nil
			got := db.UpdateVMState("ms1", v, c.ev, c.to, c.host)

			assert.Equal(t, c.want.ok, got, "answer")
			row := db.VM(id)
			assert.Equal(t, c.want.state, row.State, "row state")
			assert.Equal(t, c.want.host, row.HostID, "row host")
			assert.Equal(t, c.want.count, row.UpdateCount, "row update_count")
			if c.want.untouched {
				assert.Equal(t, read, *v, "caller's copy")
			} else {
				assert.Equal(t, c.want.copy, VMVO{State: v.State, HostID: v.HostID, LastHostID: v.LastHostID, UpdateCount: v.UpdateCount}, "caller's copy")
				assert.True(t, v.UpdateTime.After(read.UpdateTime), "the copy's update_time moves on")
				assert.Equal(t, read.PowerState, v.PowerState, "the copy keeps the columns it was read with")
			}
			var writes int
			var unable, matched bool
			for _, e := range events {
				switch {
				case e.Kind == history.State:
					writes++
				case e.Kind == history.Log && strings.HasPrefix(e.Detail, "Unable to update web1: "):
					unable = true
				case e.Kind == history.Log && e.Detail == "VM web1 state has been already been updated to "+string(c.to):
					matched = true
				}
			}
			assert.Equal(t, c.want.writes, writes, "state writes")
			assert.Equal(t, c.want.unable, unable, "Unable to update line")
			assert.Equal(t, c.want.matched, matched, "already updated line")
		})
	}
}

// Two transitions to the same state from copies read before either wrote both return true; the row is
// written once. With a different target the second loses. (VMInstanceDaoImpl.updateState as above.)
func TestConcurrentTransitionsToTheSameStateBothWin(t *testing.T) {
	db := NewDB(newClock(), nil)
	id := db.CreateVM("api", "web1", "User", nil).ID
	a, b := db.VM(id), db.VM(id)
	require.True(t, db.UpdateVMState("ms1", a, vm.StartRequested, vm.Starting, ""))
	require.True(t, db.UpdateVMState("ms2", b, vm.StartRequested, vm.Starting, ""))
	assert.True(t, b.UpdateTime.After(a.UpdateTime), "each copy has the time its own transition stamped")
	a.UpdateTime, b.UpdateTime = time.Time{}, time.Time{}
	assert.Equal(t, *a, *b, "both copies say the same but for the time")
	assert.Equal(t, int64(1), db.VM(id).UpdateCount, "one write")

	c := db.VM(id) // Starting, count 1
	d := *c
	require.True(t, db.UpdateVMState("ms1", c, vm.OperationRetry, vm.Starting, "h1"))
	require.False(t, db.UpdateVMState("ms2", &d, vm.OperationFailed, vm.Stopped, ""))
	assert.Equal(t, vm.Starting, db.VM(id).State)
}
