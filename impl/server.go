package impl

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/csconform/csconform/model/history"
)

// Server is one management server incarnation. Its threads run as Env tasks named "ms/<thread>", so a
// restart (the driver kills "ms/") ends them all; the DB, and the lock rows this server owned, remain.
type Server struct {
	ID      string // management server id (op_lock.mac, host.mgmt_server_id)
	Env     Env
	DB      *DB
	Config  *Config
	Defects Switches
	Net     Transport

	// Clustered: the server is one of several on the database (cluster.go): it keeps an mshost
	// row, watches its peers and takes the cluster-wide locks; Peers finds a running peer.
	Clustered bool
	Peers     PeerServers
	cluster   *clusterManager
	// TaskPrefix names the server's tasks in its world ("ms/" by default, so a world can end one
	// process's tasks by prefix); ThreadPrefix its threads, when several servers share a history.
	TaskPrefix, ThreadPrefix string

	agents  *AgentManager
	jobs    *AsyncJobManager
	ha      *HighAvailabilityManager
	bus     messageBusGate // the message bus's publish gate (messagebus.go)
	started time.Time

	// mu guards threadNo, unknownOnHost and reportMemos when the server's threads are real goroutines.
	// Like every Go mutex in impl it is never held across a call into Env, a Pipe or a Hypervisor: in the
	// simulator a task parks inside those, and a parked task holding a mutex would stop the world.
	mu       coopMutex
	threadNo int
	// unknownOnHost remembers the unknown domains last reported per host (PR #14207).
	unknownOnHost map[string]string
	// reportMemos keeps each host's power-sync lookups and log line between its reports
	// (takeReportMemo)
	reportMemos map[string]*reportMemo

	// syncTransitioningVmPowerState is vm.sync.power.state.transitioning, read once at start as
	// VMMI.configure does (the key is not dynamic).
	syncTransitioningVmPowerState bool

	// vmIdsInProgress is VMMI's vmIdsInProgressCache, the stall scan's view of the VMs with a pending
	// work job: filled when the scan first needs it, filled again when it is 10 s old
	// (vmIdsInProgressCache). Each server (each incarnation) has its own, as each JVM has; guarded by mu.
	vmIdsInProgress       map[int64]bool
	vmIdsInProgressFilled time.Time
}

// Thread is the identity a piece of work runs under: CloudStack's thread, which owns lock-table rows.
type Thread struct {
	Name string
	// workJob says the thread runs a job the VM work dispatcher handed it
	// (AsyncJobExecutionContext.isJobDispatchedBy(VM_WORK_JOB_DISPATCHER)): a VM operation it starts
	// runs inline under a placeholder work job instead of through the queue.
	workJob bool
}

// NewServer wires a management server; Start brings it up.
func NewServer(id string, env Env, db *DB, cfg *Config, defects Switches, net Transport) *Server {
	s := &Server{ID: id, Env: env, DB: db, Config: cfg, Defects: defects, Net: net, mu: coopMutex{env: env, name: "the server's lock"}}
	s.agents = newAgentManager(s)
	s.jobs = newAsyncJobManager(s)
	s.ha = newHighAvailabilityManager(s)
	return s
}

// Start runs CloudStack's start-up: clean up after a previous incarnation, then the periodic tasks and
// the agent listener.
func (s *Server) Start() {
	s.started = s.Env.Now()
	s.syncTransitioningVmPowerState = s.Config.Bool("vm.sync.power.state.transitioning")
	t := &Thread{Name: s.ThreadPrefix + "main"}
	s.DB.CleanupLocksForServer(s.ID)
	s.DB.ReleaseHaWorkItems(s.ID) // HighAvailabilityManagerImpl.configure: what a previous incarnation had taken
	s.agents.configure(t)         // AgentManagerImpl.configure: markHostsAsDisconnected
	// HighAvailabilityManagerImpl.start: every pending item is investigated again (a Scheduled restart
	// goes back through the investigators and the fencers), before the VMMI's cancelWorkItems (the
	// order of the two managers' start() is Spring's, not checked)
	s.DB.MarkPendingHaWorksAsInvestigating()
	s.jobs.cleanupLeftOverJobs(t)
	s.cancelWorkItems(t)
	s.ha.wakeupIfWork()
	s.agents.start(t)
	s.jobs.start()
	if s.Clustered {
		s.startCluster(t)
	}
	s.Go("Network-Scavenger", s.networkGarbageCollector)
	s.Log(t, "INFO", "", "Management server %s started", s.ID)
}

// Go starts a server thread.
func (s *Server) Go(name string, fn func(t *Thread)) {
	if !strings.HasPrefix(name, s.ThreadPrefix) {
		name = s.ThreadPrefix + name
	}
	t := &Thread{Name: name}
	prefix := s.TaskPrefix
	if prefix == "" {
		prefix = "ms/"
	}
	s.Env.Go(prefix+name, func() { fn(t) })
}

// nextThread names a pooled worker thread ("API-Job-Executor-3").
func (s *Server) nextThread(pool string) string {
	s.mu.Lock()
	s.threadNo++
	n := s.threadNo
	s.mu.Unlock()
	return s.ThreadPrefix + pool + "-" + strconv.Itoa(n) // as %s%s-%d, without fmt: a thread a task
}

// Log writes a management-server.log line into the history.
func (s *Server) Log(t *Thread, level, object, format string, args ...any) {
	s.logText(t, level, object, fmt.Sprintf(format, args...))
}

// logText is Log of a line already formatted.
func (s *Server) logText(t *Thread, level, object, text string) {
	s.DB.Emit(history.Event{Actor: t.Name, Kind: history.Log, Level: level, Object: object, Detail: text})
}

// acquireInLockTable polls the lock table until timeout (Merovingian2.acquire); false on time-out.
func (s *Server) acquireInLockTable(t *Thread, key string, timeout time.Duration) bool {
	deadline := s.Env.Now().Add(timeout)
	for {
		if s.DB.TryLock(key, s.ID, t.Name) {
			return true
		}
		if !s.Env.Now().Before(deadline) {
			s.Log(t, "WARN", "", "Timed out on acquiring lock %s", key)
			return false
		}
		wait := s.Config.Seconds("lock.poll.interval")
		if rest := deadline.Sub(s.Env.Now()); rest < wait {
			wait = rest
		}
		s.Env.Sleep(wait)
	}
}

func (s *Server) releaseFromLockTable(t *Thread, key string) { s.DB.Unlock(key, s.ID, t.Name) }
