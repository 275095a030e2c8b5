package impl

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/vm"
)

type lines []history.Event

func (l *lines) Emit(e history.Event) { *l = append(*l, e) }

func (l lines) count(detail string) int {
	n := 0
	for _, e := range l {
		if strings.Contains(e.Detail, detail) {
			n++
		}
	}
	return n
}

// stallWorld is one VM on h1 as the case sets it, in a server that runs nothing by itself.
func stallWorld(t *testing.T, hostStatus host.Status, st vm.State, ps vm.PowerState, reportedAgo time.Duration, pendingJob bool) (*Server, *lines, int64) {
	log := &lines{}
	db := NewDB(clockEnv{}, log)
	db.hosts["h1"] = &HostVO{ID: "h1", Status: hostStatus}
	cfg, err := NewConfig(nil)
	require.NoError(t, err)
	s := NewServer("ms1", taskEnv{started: new([]string)}, db, cfg, allDefects(false), nil)
	s.syncTransitioningVmPowerState = true
	v := db.CreateVM("api", "web1", "User", nil)
	row := db.vms[v.ID]
	row.State, row.HostID, row.PowerState, row.PowerHost = st, "h1", ps, "h1"
	row.UpdateTime = clockEnv{}.Now().Add(-time.Hour)
	if reportedAgo >= 0 {
		row.PowerStateUpdateTime = clockEnv{}.Now().Add(-reportedAgo)
	}
	if pendingJob {
		db.CreateJob("api", "VmWorkStart", "VirtualMachine", v.ID, "ms1")
	}
	db.reindex() // the row was written behind the store's back: the host index follows it
	return s, log, v.ID
}

// VirtualMachineManagerImpl.scanStalledVMInTransitionStateOnUpHost (bhouse-nexthop/cloudstack@d4da80c5):
// on an Up host, a VM in Starting/Stopping/Migrating with no work job in progress whose power state was
// updated before now − vm.job.report.interval × 2 ms (120 ms) goes to handlePowerOffReport…; one updated
// after it goes to handlePowerOnReport… if PowerOn. Not on a host that is not Up, not with a job. The
// power-off handler (d4da80c5 and a later upstream copy alike) moves a PowerOn VM to Stopped with no
// StopCommand and no release (FollowAgentPowerOffReport): C9. C9's fix sends a stalled PowerOn VM to
// the power-on handler, as a recent one.
func TestScanStalledVMInTransitionStateOnUpHost(t *testing.T) {
	cases := []struct {
		name        string
		c9          bool
		host        host.Status
		state       vm.State
		power       vm.PowerState
		reportedAgo time.Duration
		job         bool
		want        vm.State
		offHandled  bool
	}{
		{"recent PowerOn: followed to Running", false, host.Up, vm.Starting, vm.PowerOn, 50 * time.Millisecond, false, vm.Running, false},
		{"PowerOn 200 ms old is stalled, C9: Stopped with its domain running", true, host.Up, vm.Starting, vm.PowerOn, 200 * time.Millisecond, false, vm.Stopped, true},
		{"PowerOn 200 ms old is stalled, fixed: followed to Running", false, host.Up, vm.Starting, vm.PowerOn, 200 * time.Millisecond, false, vm.Running, false},
		{"recent PowerOff: power-off handler", false, host.Up, vm.Stopping, vm.PowerOff, 50 * time.Millisecond, false, vm.Stopping, true},
		{"work job in progress: left alone", false, host.Up, vm.Starting, vm.PowerOn, 50 * time.Millisecond, true, vm.Starting, false},
		{"host not Up: left alone", false, host.Disconnected, vm.Starting, vm.PowerOn, 50 * time.Millisecond, false, vm.Starting, false},
		{"Running is not in transition", false, host.Up, vm.Running, vm.PowerOff, time.Hour, false, vm.Running, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, log, id := stallWorld(t, c.host, c.state, c.power, c.reportedAgo, c.job)
			s.Defects[C9] = c.c9
			s.scanStalledVMInTransitionStateOnUpHost(&Thread{Name: "AgentTaskPool-1"}, "h1")
			require.Equal(t, c.want, s.DB.VM(id).State)
			n := log.count("we received a Power") // the power-off handler names the power state
			if c.offHandled {
				require.Equal(t, 1, n, "the power-off handler should have run once")
			} else {
				require.Zero(t, n)
			}
		})
	}
	// the gate (vm.sync.power.state.transitioning, read in configure)
	s, _, id := stallWorld(t, host.Up, vm.Starting, vm.PowerOn, 50*time.Millisecond, false)
	s.syncTransitioningVmPowerState = false
	s.scanStalledVMInTransitionStateOnUpHost(&Thread{Name: "AgentTaskPool-1"}, "h1")
	require.Equal(t, vm.Starting, s.DB.VM(id).State)
}

// VirtualMachineManagerImpl.scanStalledVMInTransitionStateOnDisconnectedHosts (d4da80c5), from
// TransitionTask: alert only, for a VM in transition with no work job whose host is not Up and whose
// power state is older than vm.op.wait.interval (120 s); a null power_state_update_time never matches.
func TestScanStalledVMInTransitionStateOnDisconnectedHosts(t *testing.T) {
	cases := []struct {
		name        string
		host        host.Status
		reportedAgo time.Duration // < 0: never reported
		job         bool
		alert       bool
	}{
		{"host Disconnected, reported 5 min ago", host.Disconnected, 5 * time.Minute, false, true},
		{"host Alert, reported 5 min ago", host.Alert, 5 * time.Minute, false, true},
		{"reported 1 min ago", host.Disconnected, time.Minute, false, false},
		{"never reported", host.Disconnected, -1, false, false},
		{"work job in progress", host.Disconnected, 5 * time.Minute, true, false},
		{"host Up", host.Up, 5 * time.Minute, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, log, id := stallWorld(t, c.host, vm.Starting, vm.PowerOn, c.reportedAgo, c.job)
			s.transitionTask(&Thread{Name: "AsyncJobMgr-Heartbeat-2"})
			n := log.count("is stuck in Starting state and its host is unreachable for too long")
			require.Equal(t, c.alert, n == 1, "alerts: %d", n)
			require.Equal(t, vm.Starting, s.DB.VM(id).State, "the scan only alerts")
		})
	}
}

// taskEnv is clockEnv that records the tasks it is asked to start (HA's worker) instead of running them.
type taskEnv struct {
	clockEnv
	started *[]string
}

func (e taskEnv) Go(name string, _ func()) { *e.started = append(*e.started, name) }

// VirtualMachineManagerImpl.TransitionTask (d4da80c5; scheduled every vm.op.cleanup.interval in
// start()): after the disconnected-host scan, findVMInTransition(now - wait, Starting, Stopping), and
// for each a Stopping VM gets _haMgr.scheduleStop(vm, hostId, CheckStop), a Starting one
// _haMgr.scheduleRestart(vm, true). A VM updated within `wait` (1800 s) is left alone.
func TestTransitionTaskHandsStalledVMsToHA(t *testing.T) {
	for _, c := range []struct {
		name    string
		state   vm.State
		updated time.Duration // ago
		work    string        // the HA item scheduled, "" for none
	}{
		{"Starting for an hour", vm.Starting, time.Hour, "HAWork[1-HA-1-Starting-Investigating]"},
		{"Stopping for an hour", vm.Stopping, time.Hour, "HAWork[1-CheckStop-1-Stopping-Scheduled]"},
		{"Starting for 10 minutes", vm.Starting, 10 * time.Minute, ""},
		{"Running for an hour", vm.Running, time.Hour, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _, id := stallWorld(t, host.Up, c.state, vm.PowerOn, time.Minute, false)
			s.DB.vms[id].UpdateTime = clockEnv{}.Now().Add(-c.updated)
			s.transitionTask(&Thread{Name: "AsyncJobMgr-Heartbeat-2"})
			var got []string
			for _, w := range s.DB.haWorkRows() {
				got = append(got, w.String())
			}
			if c.work == "" {
				require.Empty(t, got)
			} else {
				require.Equal(t, []string{c.work}, got)
			}
			require.Equal(t, c.state, s.DB.VM(id).State, "scheduling changes no state")
		})
	}
}

// tickEnv is taskEnv on a clock the test moves.
type tickEnv struct {
	taskEnv
	now *time.Time
}

func (e tickEnv) Now() time.Time { return *e.now }

// The stall scan's pending-job filter is a cache filled up to 10 s earlier. Java read for it:
// bhouse-nexthop/cloudstack@d4da80c5 (the 4.22-branch fork)
// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java — start() builds
// vmIdsInProgressCache = new SingleCache<>(10, vmWorkJobDao::listVmIdsWithPendingJob);
// listStalledVMInTransitionStateOnUpHost and listVMInTransitionStateWithRecentReportOnUpHost each
// return an empty host list untouched and otherwise filter it with vmIdsInProgressCache.get().
// apache/cloudstack@61764aba utils/src/main/java/org/apache/cloudstack/utils/cache/SingleCache.java:
// one Caffeine entry, expireAfterWrite(10, SECONDS), loaded again by the get after that.
// d4m14ndx/cloudstack@0bd0bc22 framework/jobs/src/main/java/org/apache/cloudstack/framework/jobs/dao/VmWorkJobDaoImpl.java
// listVmIdsWithPendingJob: the vm_instance_id of every vm_work_job whose async_job is IN_PROGRESS.
// (The later upstream copy, d4m14ndx/cloudstack@122cf499 VmPowerStateSyncManagerImpl, has the same
// cache, built in init().) So a VM whose start began after the fill is "stalled" for up to 10 s: with
// C10 the scan handles it under its running start; C10's fix asks vm_work_job again
// (listPendingWorkJobs, as handlePowerStateReport does) for a VM the cache calls free.
func TestStallScanPendingJobsComeFromA10sCache(t *testing.T) {
	scan := func(s *Server) { s.scanStalledVMInTransitionStateOnUpHost(&Thread{Name: "AgentTaskPool-1"}, "h1") }
	for _, c10 := range []bool{true, false} {
		t.Run(map[bool]string{true: "C10", false: "fixed"}[c10], func(t *testing.T) {
			now := clockEnv{}.Now()
			env := tickEnv{taskEnv{started: new([]string)}, &now}
			log := &lines{}
			db := NewDB(env, log)
			db.hosts["h1"] = &HostVO{ID: "h1", Status: host.Up}
			cfg, err := NewConfig(nil)
			require.NoError(t, err)
			sw := allDefects(false)
			sw[C10] = c10
			s := NewServer("ms1", env, db, cfg, sw, nil)
			s.syncTransitioningVmPowerState = true
			// web0 is starting on h1 under its job; web1 is Stopped, reported PowerOn an hour ago
			web0 := db.CreateVM("api", "web0", "User", nil)
			web1 := db.CreateVM("api", "web1", "User", nil)
			row0 := db.vms[web0.ID]
			row0.State, row0.HostID, row0.PowerState, row0.PowerHost = vm.Starting, "h1", vm.PowerOn, "h1"
			row0.PowerStateUpdateTime = now.Add(-time.Hour)
			db.CreateJob("api", "VmWorkStart", "VirtualMachine", web0.ID, "ms1")
			row1 := db.vms[web1.ID]
			row1.PowerState, row1.PowerHost, row1.PowerStateUpdateTime = vm.PowerOn, "h1", now.Add(-time.Hour)
			db.reindex()

			scan(s) // fills the cache: web0 only
			require.Equal(t, 1, log.count("Filled the cache of VMs with pending work jobs"), "one fill serves both lists of a scan")
			require.Equal(t, vm.Starting, db.VM(web0.ID).State)

			// 5 s later web1's start is under way on h1, its work job newer than the cache
			now = now.Add(5 * time.Second)
			row1.State, row1.HostID = vm.Starting, "h1"
			db.CreateJob("api", "VmWorkStart", "VirtualMachine", web1.ID, "ms1")
			db.reindex()
			scan(s)
			require.Equal(t, 1, log.count("Filled the cache of VMs with pending work jobs"), "the cache is 5 s old: not filled again")
			if c10 {
				require.Equal(t, 1, log.count("VM web1 is stalled in Starting on Up host h1"), "C10: the cache knows no job of web1")
				require.Equal(t, vm.Running, db.VM(web1.ID).State, "handled as stalled (PowerOn: followed) under its running start")
				return
			}
			require.Zero(t, log.count("is stalled in"))
			require.Equal(t, 1, log.count("VM web1 has a pending work job the cache"))
			require.Equal(t, vm.Starting, db.VM(web1.ID).State, "fixed: left to its start")

			// at 10 s the cache is filled again, and knows web1's job
			now = now.Add(5 * time.Second)
			scan(s)
			require.Equal(t, 2, log.count("Filled the cache of VMs with pending work jobs"))
			require.Equal(t, 1, log.count("VM web1 has a pending work job the cache"), "the new fill has web1's job")
		})
	}
	// a host with no VM in transition does not fill it (both lists return the empty list untouched)
	s, log, id := stallWorld(t, host.Up, vm.Running, vm.PowerOn, time.Hour, false)
	s.scanStalledVMInTransitionStateOnUpHost(&Thread{Name: "AgentTaskPool-1"}, "h1")
	require.Zero(t, log.count("Filled the cache"))
	require.Equal(t, vm.Running, s.DB.VM(id).State)
}
