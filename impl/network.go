package impl

import (
	"errors"
	"strconv"
	"time"

	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// NetworkOrchestrator paths (spec 3.3–3.7) and the orphaned-network cleanup (4.1).

func isNetworkImplemented(n *NetworkVO) bool {
	return n.State == network.Implemented || (n.State == network.Setup && !n.Persistent)
}

// implementNetwork holds the network's lock-table entry for the whole implementation, including the
// virtual router's boot (spec 3.3). As the Java's Pair: (n, nil) implemented; (nil, nil) a failure it
// caught (NoTransitionException, CloudRuntimeException — ConcurrentOperationException among them — and
// OperationTimedoutException: `return new Pair<>(null, null)`); (nil, err) an exception it lets
// through after its finally's cleanup: the lock not acquired (ConcurrentOperationException, thrown
// before the try), and the checked ResourceUnavailableException (a router start's
// AgentUnavailableException) and InsufficientCapacityException, which prepare passes on to
// orchestrateStart's catch blocks.
func (s *Server) implementNetwork(t *Thread, id int64, dest string) (n *NetworkVO, err error) {
	n = s.DB.Network(id)
	if n == nil {
		return nil, runtimeErr("Unable to find network %d", id)
	}
	if isNetworkImplemented(n) {
		s.Log(t, "DEBUG", NetworkObject(id), "Network %d is already implemented", id)
		return n, nil
	}
	key := NetworkLockKey(id)
	if !s.acquireInLockTable(t, key, s.Config.Seconds("network.lock.timeout")) {
		return nil, &ConcurrentOperationError{Msg: "Unable to acquire network configuration: " + strconv.FormatInt(id, 10)}
	}
	s.Log(t, "DEBUG", NetworkObject(id), "Lock is acquired for network id %d as a part of network implement", id)
	defer func() {
		s.releaseFromLockTable(t, key)
		s.Log(t, "DEBUG", NetworkObject(id), "Lock is released for network %d as a part of network implement", id)
	}()
	n = s.DB.Network(id)
	if isNetworkImplemented(n) {
		return n, nil
	}
	failed, shutdownTried := true, false
	defer func() {
		if !failed {
			return
		}
		s.Log(t, "DEBUG", NetworkObject(id), "Cleaning up because we're unable to implement the network %d", id)
		// reload: n is the named result, already nil on an error return
		if cur := s.DB.Network(id); cur != nil && !mutated(MutImplementFailureStays) {
			if to, ok := network.Next(cur.State, network.OperationFailed); ok {
				s.DB.UpdateNetworkState(t.Name, cur, to, "implementNetwork failed: OperationFailed", false)
			}
		}
		if !mutated(MutImplementFailureStays) && !shutdownTried {
			s.shutdownNetwork(t, id)
		}
		n = nil
	}()
	// A network an earlier failed implementation left in Shutdown (its cleanup could not stop the
	// router: Starting, or its host away) has no ImplementNetwork transition: in 4.22 (C5) this start
	// fails on NoTransitionException, and only its own cleanup's shutdownNetwork moves the network on to
	// Allocated, for the next start. The fix completes that shutdown first and implements at once.
	if n.State == network.Shutdown && !s.Defects[C5] {
		s.Log(t, "DEBUG", NetworkObject(id), "Network %d was left in Shutdown by an earlier shutdown that did not complete; completing it before implementing", id)
		shutdownTried = true
		if !s.shutdownNetwork(t, id) {
			s.Log(t, "ERROR", NetworkObject(id), "Caught exception: Unable to implement network %d: its earlier shutdown still cannot complete", id)
			return nil, nil
		}
		n = s.DB.Network(id)
	}
	s.Log(t, "DEBUG", NetworkObject(id), "Asking GuestNetworkGuru to implement network %d", id)
	to, ok := network.Next(n.State, network.ImplementNetwork)
	if !ok {
		s.Log(t, "ERROR", NetworkObject(id), "NoTransitionException: unable to transition network %d from %s via %s", id, n.State, network.ImplementNetwork)
		return nil, nil
	}
	s.DB.UpdateNetworkState(t.Name, n, to, "implementNetwork: ImplementNetwork", false)
	s.Env.Sleep(100 * time.Millisecond) // guru.implement
	if err := s.implementElements(t, n, dest); err != nil {
		if !caughtByImplementNetwork(err) {
			return nil, err // through the finally's cleanup to prepare and orchestrateStart
		}
		s.Log(t, "ERROR", NetworkObject(id), "Caught exception: %v", err)
		return nil, nil
	}
	// The last transition: the Java fires it on its own copy (still Implementing), which NetworkDaoImpl
	// writes over the row whatever another writer left there; the reread reading validates it against
	// the row as it is now (ImplementFinalTransition).
	if s.Config.ImplementFinalTransition() == FinalTransitionReread {
		n = s.DB.Network(id)
	}
	to, ok = network.Next(n.State, network.OperationSucceeded)
	if !ok {
		s.Log(t, "ERROR", NetworkObject(id), "NoTransitionException: unable to transition network %d from %s via %s", id, n.State, network.OperationSucceeded)
		return nil, nil
	}
	s.DB.UpdateNetworkState(t.Name, n, to, "implementNetwork: OperationSucceeded", false)
	failed = false
	return n, nil
}

// caughtByImplementNetwork says whether implementNetwork's catch blocks take err: CloudRuntimeException
// (ConcurrentOperationException extends it) and OperationTimedoutException. ResourceUnavailableException
// (AgentUnavailableException) is a checked CloudException none of them names.
func caughtByImplementNetwork(err error) bool {
	var re *ResourceUnavailableError
	var ue *AgentUnavailableError
	return !errors.As(err, &re) && !errors.As(err, &ue)
}

// implementElements is implementNetworkElementsAndResources: the virtual router. Starting it is most of
// an implementation (36–41 s in the seed report); a running router only needs its rules applied.
func (s *Server) implementElements(t *Thread, n *NetworkVO, dest string) error {
	r := s.routerOf(t, n)
	if r.State == vm.Running {
		s.Env.Sleep(2 * time.Second) // apply IP associations, rules, DHCP entries
		return nil
	}
	return s.startRouter(t, r, n, dest)
}

func (s *Server) routerOf(t *Thread, n *NetworkVO) *VMVO {
	if n.RouterID != 0 {
		return s.DB.VM(n.RouterID)
	}
	r := s.DB.CreateVM(t.Name, "", "DomainRouter", []int64{n.ID})
	s.DB.CreateVolume(t.Name, r.ID)
	s.DB.SetNetworkRouter(n.ID, r.ID)
	n.RouterID = r.ID
	return r
}

// startRouter starts the network's router inline in the implementing thread (a placeholder work job
// keeps power reports off it meanwhile) and answers once the guest is ready.
func (s *Server) startRouter(t *Thread, r *VMVO, n *NetworkVO, dest string) error {
	var placeholder *JobVO
	if !mutated(MutRouterStartNoPlaceholder) {
		placeholder = s.DB.CreateJob(t.Name, "VmWorkStart(placeholder)", "VirtualMachine", r.ID, s.ID)
	}
	started := false
	defer func() {
		if placeholder == nil {
			return
		}
		if started {
			s.jobs.complete(t, placeholder.ID, nil)
		} else {
			s.jobs.complete(t, placeholder.ID, runtimeErr("router start failed"))
		}
	}()
	if r.State != vm.Stopped {
		return runtimeErr("Router %s is in %s state", r.Name, r.State)
	}
	if !s.startRequested(t, r) {
		return &ConcurrentOperationError{Msg: "Unable to change the state of " + r.Name}
	}
	s.DB.UpdateVMState(t.Name, r, vm.OperationRetry, vm.Starting, dest)
	// the router's prepare: prepareNic → updateNic sets check_for_gc for a DomainRouter NIC on a Guest
	// network (the reference's routers have no NIC rows; this is where their prepare would run)
	s.DB.SetCheckForGC(n.ID)
	spec := s.domainSpec(r)
	spec.IPs = []string{n.Gateway()}
	s.Log(t, "DEBUG", VMObject(r.ID), "Sending StartCommand for %s to host %s", r.Name, dest)
	ans, err := s.agents.Send(t, dest, Message{Kind: MsgStart, Domain: &spec, WaitReady: s.Config.Seconds("router.ready.timeout")}, 0)
	if err == nil && !ans.Result {
		err = runtimeErr("Unable to start %s: %s", r.Name, ans.Details)
	}
	if err != nil {
		// as in orchestrateStart: after a timeout the router stays Starting on the host, which may
		// run it; power sync or the stall scans settle it once the host reports. The router's
		// orchestrateStart then throws AgentUnavailableException("Unable to start …", destHostId),
		// which NetworkHelperImpl.start, VirtualRouterElement.implement and implementNetwork let through.
		var te *OperationTimedoutError
		timedOut := errors.As(err, &te)
		if (!timedOut && !mutated(MutRouterFailedStartStarting)) || mutated(MutRouterTimeoutStopsRecord) {
			s.DB.UpdateVMState(t.Name, r, vm.OperationFailed, vm.Stopped, "")
		}
		if timedOut {
			return &AgentUnavailableError{Host: dest, Reason: "Unable to start " + r.Name}
		}
		return err
	}
	s.Log(t, "DEBUG", VMObject(r.ID), "router start completed: %s", r.Name)
	s.DB.UpdateVMState(t.Name, r, vm.OperationSucceeded, vm.Running, dest)
	started = true
	return nil
}

// prepare implements each NIC's network and reserves the NIC (spec 3.4).
func (s *Server) prepare(t *Thread, v *VMVO, dest string) error {
	for _, nic := range s.DB.Nics(v.ID) {
		n, err := s.implementNetwork(t, nic.NetworkID, dest)
		if err != nil {
			return err // what implementNetwork did not catch goes on to orchestrateStart as it is
		}
		if n == nil {
			s.Log(t, "WARN", NetworkObject(nic.NetworkID), "Failed to implement Network: %d as a part of preparing NIC %d", nic.NetworkID, nic.ID)
			return runtimeErr("Failed to implement Network ID=%d as a part preparing NIC %d", nic.NetworkID, nic.ID)
		}
		if err := s.prepareNic(t, v, nic, n, dest); err != nil {
			return err
		}
	}
	return nil
}

// prepareNic reserves the NIC, then asks the network's element to prepare for it (prepareElement →
// VirtualRouterElement.prepare), which for a user VM starts the network's router if it is not
// running: a network already Implemented does not pass through implementNetwork's element
// implementation again, so this is where its Stopped router comes back.
func (s *Server) prepareNic(t *Thread, v *VMVO, nic *NicVO, n *NetworkVO, dest string) error {
	if !isNetworkImplemented(n) {
		return &ResourceUnavailableError{Resource: "Network:" + strconv.FormatInt(n.ID, 10), Reason: "Network is not yet fully implemented"}
	}
	s.DB.SetNicState(nic.ID, "Reserving")
	if ip := s.reserveIP(t, nic); ip == "" {
		s.DB.SetNicState(nic.ID, "Allocated")
		return &ResourceUnavailableError{Resource: "Network:" + strconv.FormatInt(n.ID, 10), Reason: "Insufficient address capacity"}
	}
	s.DB.SetNicState(nic.ID, "Reserved")
	if v.Type == "User" {
		s.DB.ChangeActiveNicsBy(n.ID, +1)
		// VirtualRouterElement.prepare returns false at once for any VM but a user VM
		return s.prepareVirtualRouter(t, n, dest)
	}
	return nil
}

// errNoRunningRouter is VirtualRouterElement.prepare's ResourceUnavailableException when startRouters
// returned no router; its scope is the zone (DataCenter), which orchestrateStart adds to its avoid
// set: the next plan finds no host, and the start fails with the last known error.
func errNoRunningRouter() error {
	return &ResourceUnavailableError{Resource: "DataCenter:1", Reason: "Can't find at least one running router!"}
}

// prepareVirtualRouter is VirtualRouterElement.prepare → RouterDeploymentDefinition.deployVirtualRouter
// → NetworkHelperImpl.startRouters for the network's one router: a Running router is left alone; a
// router not Running whose host is set and not Up is skipped, and with no router left the element
// throws "Can't find at least one running router!"; any other router not Running is started
// (startVirtualRouter → advanceStart, inline in the user VM's work job as implementNetwork's start is).
// A network with no router row would get one deployed under the network's lock
// (findOrDeployVirtualRouter); every Implemented network here has one, so that is an error.
func (s *Server) prepareVirtualRouter(t *Thread, n *NetworkVO, dest string) error {
	// The Java lists the network's routers on every user VM's start; that read of a Running router is
	// not a scheduling point here (as isNetworkReadyForGc's), so PCT histories of starts behind a
	// running router stay as they were. Left for an issue, with that one.
	if n.RouterID != 0 && s.DB.vmStateNoPoint(n.RouterID) == vm.Running {
		return nil
	}
	var r *VMVO
	if n.RouterID != 0 {
		r = s.DB.VM(n.RouterID)
	}
	if r == nil || r.Removed {
		return errNoRunningRouter()
	}
	if r.State == vm.Running {
		return nil
	}
	if r.HostID != "" {
		if h := s.DB.Host(r.HostID); h == nil || h.Status != host.Up {
			s.Log(t, "WARN", NetworkObject(n.ID), "Router %s is %s on host %s, which is not Up: skipped", r.Name, r.State, r.HostID)
			return errNoRunningRouter()
		}
	}
	s.Log(t, "DEBUG", VMObject(r.ID), "Starting router %s", r.Name)
	return s.startVirtualRouter(t, r, n, dest)
}

// startVirtualRouter is the router's advanceStart from VirtualRouterElement.prepare, up to its
// changeToStartState: vm.op.lock.state.retry rounds, each trying Stopped → Starting (startRouter); a
// Running router is already started; a router Starting under another start is waited on as
// checkWorkItems waits on that start's op_it_work row — every vm.op.wait.interval until it is Running
// or the row is Done, for at most vm.op.cancel.interval, then "There are concurrent operations" —
// where the reference's router starts, which write no row, have their placeholder work job pending;
// any other transitional state has no row to wait on, and the round is tried again at once; any other
// state "is not in a state to be started" and returns, which startRouters takes for a router.
// Divergence: the wait is measured from its own beginning, not from the row's last step.
func (s *Server) startVirtualRouter(t *Thread, r *VMVO, n *NetworkVO, dest string) error {
	for retry := s.Config.Int("vm.op.lock.state.retry"); retry != 0; retry-- {
		switch {
		case r.State == vm.Stopped:
			err := s.startRouter(t, r, n, dest)
			var ce *ConcurrentOperationError
			if !errors.As(err, &ce) {
				return err
			}
			// another start took the router from Stopped first: look at it again
			s.Log(t, "DEBUG", VMObject(r.ID), "Determining why we're unable to update the state to Starting for %s. Retry=%d", r.Name, retry-1)
		case r.State == vm.Running:
			s.Log(t, "DEBUG", VMObject(r.ID), "VM is already started: %s", r.Name)
			return nil
		case r.State == vm.Starting:
			since := s.Env.Now()
			for {
				cur := s.DB.VM(r.ID)
				if cur == nil || cur.State != vm.Starting || !s.jobs.PendingWorkJobs(r.ID) {
					break
				}
				if s.Env.Now().Sub(since) > s.Config.Seconds("vm.op.cancel.interval") {
					return &ConcurrentOperationError{Msg: "There are concurrent operations on " + r.Name}
				}
				s.Env.Sleep(s.Config.Seconds("vm.op.wait.interval"))
				s.Log(t, "DEBUG", VMObject(r.ID), "Waiting some more to make sure there's no activity on %s", r.Name)
			}
		case r.State.IsTransitional():
			s.Log(t, "DEBUG", VMObject(r.ID), "Unable to find work for VM: %s and state: %s", r.Name, r.State)
		default:
			s.Log(t, "DEBUG", VMObject(r.ID), "VM %s is not in a state to be started: %s", r.Name, r.State)
			return nil
		}
		if r = s.DB.VM(r.ID); r == nil {
			return &ConcurrentOperationError{Msg: "Unable to acquire lock on router"}
		}
	}
	return &ConcurrentOperationError{Msg: "Unable to change the state of " + r.Name}
}

// releaseNic returns a reserved NIC's address to the pool (spec 3.5): it can be handed to another VM
// at once.
func (s *Server) releaseNic(t *Thread, v *VMVO, nic *NicVO) {
	if nic.State != "Reserved" && nic.State != "Reserving" {
		return
	}
	wasReserved := nic.State == "Reserved"
	s.DB.SetNicState(nic.ID, "Releasing")
	s.DB.ReleaseIP(t.Name, nic.ID)
	s.Log(t, "DEBUG", VMObject(v.ID), "The nic %d on %s was released according to GuestNetworkGuru, now updating record.", nic.ID, v.Name)
	s.DB.SetNicState(nic.ID, "Allocated")
	if wasReserved && v.Type == "User" && !mutated(MutReleaseNicKeepsCount) {
		s.DB.ChangeActiveNicsBy(nic.NetworkID, -1)
	}
}

// releaseVmResources releases NICs and volumes; nothing here asks the host anything.
func (s *Server) releaseVmResources(t *Thread, v *VMVO) {
	for _, nic := range s.DB.Nics(v.ID) {
		s.releaseNic(t, v, nic)
	}
	s.Log(t, "DEBUG", VMObject(v.ID), "Successfully cleaned up resources for the VM %s in %s state", v.Name, v.State)
}

// cleanupNics removes a VM's NICs at expunge.
func (s *Server) cleanupNics(t *Thread, v *VMVO) {
	s.Log(t, "DEBUG", VMObject(v.ID), "Cleaning Network for Instance: %s", v.Name)
	for _, nic := range s.DB.Nics(v.ID) {
		s.releaseNic(t, v, nic)
		s.DB.RemoveNic(nic.ID)
	}
}

// shutdownNetwork (spec 3.6): never shuts down a network in Implementing.
func (s *Server) shutdownNetwork(t *Thread, id int64) bool { return s.shutdownNetworkIf(t, id, nil) }

// shutdownNetworkIf is shutdownNetwork with a last condition checked under the network's lock (nil:
// none); false from it leaves the network as it is.
func (s *Server) shutdownNetworkIf(t *Thread, id int64, still func(n *NetworkVO) bool) bool {
	key := NetworkLockKey(id)
	if !s.acquireInLockTable(t, key, s.Config.Seconds("network.lock.timeout")) {
		s.Log(t, "WARN", NetworkObject(id), "Unable to acquire lock for the network %d as a part of network shutdown", id)
		return false
	}
	defer s.releaseFromLockTable(t, key)
	n := s.DB.Network(id)
	if still != nil && !still(n) {
		return false
	}
	switch n.State {
	case network.Allocated:
		s.Log(t, "DEBUG", NetworkObject(id), "Network [%d] is in Allocated state, no need to shutdown.", id)
		return true
	case network.Implemented, network.Shutdown:
	case network.Implementing:
		if !mutated(MutShutdownWhileImplementing) {
			s.Log(t, "DEBUG", NetworkObject(id), "Network is not implemented: %d", id)
			return false
		}
	default:
		s.Log(t, "DEBUG", NetworkObject(id), "Network is not implemented: %d", id)
		return false
	}
	wasImplemented := isNetworkImplemented(n)
	if to, ok := network.Next(n.State, network.DestroyNetwork); ok {
		s.DB.UpdateNetworkState(t.Name, n, to, "shutdownNetwork: DestroyNetwork", false)
	} else if n.State != network.Shutdown {
		s.DB.UpdateNetworkState(t.Name, n, network.Shutdown, "shutdownNetwork: setState(Shutdown)", true)
	}
	if still != nil && wasImplemented && !still(n) {
		// a start read the network Implemented (implementNetwork's check without the lock) between
		// the look above and the write: it goes on to reserve its NIC, so the network stays
		s.DB.UpdateNetworkState(t.Name, n, network.Implemented, "shutdownNetwork: setState(Implemented)", true)
		return false
	}
	// shutdownNetworkElementsAndResources: the router is the only element; VirtualRouterElement.shutdown
	// stops it whatever its state (a stopped one stops at once)
	success := true
	if n.RouterID != 0 {
		if r := s.DB.VM(n.RouterID); r != nil && !r.Removed {
			s.Log(t, "DEBUG", NetworkObject(id), "Sending network shutdown to VirtualRouter")
			if !s.stopRouter(t, r) {
				s.Log(t, "WARN", NetworkObject(id), "Unable to complete shutdown of the network elements due to element: VirtualRouter")
				success = mutated(MutShutdownIgnoresRouterStop)
			}
		}
	}
	if !success {
		// OperationFailed from Shutdown stays Shutdown; the Java's NoTransitionException fallback
		// (setState(Implemented)) cannot happen from Shutdown
		if to, ok := network.Next(n.State, network.OperationFailed); ok {
			s.DB.UpdateNetworkState(t.Name, n, to, "shutdownNetwork: OperationFailed", false)
		} else {
			s.DB.UpdateNetworkState(t.Name, n, network.Implemented, "shutdownNetwork: setState(Implemented)", true)
		}
		return false
	}
	s.Log(t, "DEBUG", NetworkObject(id), "Network %d is shutdown successfully, cleaning up corresponding resources now.", id)
	to, _ := network.Next(network.Shutdown, network.OperationSucceeded)
	s.DB.UpdateNetworkState(t.Name, n, to, "shutdownNetwork: OperationSucceeded", false)
	s.DB.ClearCheckForGC(id)
	return true
}

// stopRouter is VirtualRouterElement.shutdown's stop of the router: VirtualNetworkApplianceManagerImpl.stop
// (router, forced=false) → VMMI.advanceStop. From a thread running a VM work job (a start that
// implements the network and fails) it runs inline under a placeholder work job (re-entrance); from any
// other thread (the network GC, an API job) it goes through the router's VM work queue. Either way the
// router has a pending work job while its StopCommand runs, so its power reports wait, and
// orchestrateStop releases its NICs. false = the stop failed (the router stays as orchestrateStop left
// it, Running if the host could not be reached).
func (s *Server) stopRouter(t *Thread, r *VMVO) bool {
	s.Log(t, "DEBUG", VMObject(r.ID), "Stopping router %s", r.Name)
	var err error
	if t.workJob {
		placeholder := s.DB.CreateJob(t.Name, "VmWorkStop(placeholder)", "VirtualMachine", r.ID, s.ID)
		err = s.orchestrateStop(t, r.ID, unforced)
		s.jobs.complete(t, placeholder.ID, err)
	} else {
		err = s.advanceStop(t, r.ID, unforced)
	}
	if err == nil {
		return true
	}
	s.Log(t, "WARN", VMObject(r.ID), "Failed to stop virtual router element %s, but would try to process clean up anyway: %v", r.Name, err)
	if mutated(MutRouterStopFailureStopped) {
		if cur := s.DB.VM(r.ID); cur != nil && cur.State != vm.Stopped {
			s.DB.UpdateVMState(t.Name, cur, vm.OperationSucceeded, vm.Stopped, "")
		}
		return true
	}
	return false
}

// networkGarbageCollector is the NetworkGarbageCollector (spec 3.7): a network must be seen free twice,
// network.gc.wait apart.
func (s *Server) networkGarbageCollector(t *Thread) {
	s.Log(t, "INFO", "", "Network Manager will run the NetworkGarbageCollector every '%s' seconds.", s.Config.Get("network.gc.interval"))
	lastFree := map[int64]time.Time{}
	for {
		s.Env.Sleep(s.Config.Seconds("network.gc.interval"))
		// Network.GC.Lock: one server a tick; lastFree is this server's memory, so a network is shut
		// down only when the same server has seen it free network.gc.wait apart
		release, ok := s.globalLock(t, "Network.GC.Lock")
		if !ok {
			continue
		}
		now := s.Env.Now()
		stillFree := map[int64]time.Time{}
		var shutdown []int64
		for _, n := range s.DB.Networks(func(n *NetworkVO) bool { return !n.Persistent && n.NicsCount == 0 && n.CheckForGC }) {
			if !s.isNetworkReadyForGc(n) {
				continue
			}
			first, seen := lastFree[n.ID]
			switch {
			case !seen && !mutated(MutGCFirstSighting):
				s.Log(t, "DEBUG", NetworkObject(n.ID), "We found network %d to be free for the first time. Adding it to the list", n.ID)
				stillFree[n.ID] = now
			case now.Sub(first) < s.Config.Seconds(gcWaitKey()):
				s.Log(t, "DEBUG", NetworkObject(n.ID), "Network %d is still free but it's not time to shutdown yet", n.ID)
				stillFree[n.ID] = first
			default:
				shutdown = append(shutdown, n.ID)
			}
		}
		lastFree = stillFree
		for _, id := range shutdown {
			if !s.shutdownNetworkIf(t, id, s.stillFreeForGc(t)) {
				s.Log(t, "WARN", NetworkObject(id), "Unable to shutdown network: %d", id)
			}
		}
		release()
	}
}

// gcWaitKey is the setting the GC waits between seeing a network free and shutting it down.
func gcWaitKey() string {
	if mutated(MutGCWaitIsInterval) {
		return "network.gc.interval"
	}
	return "network.gc.wait"
}

// stillFreeForGc is the GC's last look at a network of its shutdown list, under the network's lock.
// In 4.22 (C4) there is none: NetworkGarbageCollector.reallyRun decides on every network at its tick
// and then shuts them down one after another (shutdownNetwork asks nothing more), so a VM that
// started on a later network of the list meanwhile — implementNetwork found it Implemented — loses
// its network and router under it. The fix asks isNetworkReadyForGc again under the lock, twice
// (shutdownNetworkIf): before the DestroyNetwork write, and after it. The lock alone does not keep a
// start out: implementNetwork reads an Implemented network without it (apache@0035c613, "Acquire
// lock only when network needs to be implemented"), so a start whose VM went Starting after the
// first look may still read Implemented before the write and reserve its NIC (explore finding G,
// harness/testdata/gc-last-look-vs-start.yaml). After the write a start reads Shutdown and waits for
// the lock in implementNetwork, then implements the network again; a start that read Implemented
// before it had moved its VM to Starting already (changeToStartState comes before prepare), so the
// second look sees it and the GC puts Implemented back.
func (s *Server) stillFreeForGc(t *Thread) func(n *NetworkVO) bool {
	if s.Defects[C4] {
		return nil
	}
	return func(n *NetworkVO) bool {
		if s.DB.networkActiveNicsNoPoint(n.ID) == 0 && s.isNetworkReadyForGc(n) {
			return true
		}
		s.Log(t, "DEBUG", NetworkObject(n.ID), "Network %d is in use again: not shutting it down", n.ID)
		return false
	}
}

func (s *Server) isNetworkReadyForGc(n *NetworkVO) bool {
	for _, v := range s.DB.VMsInNetwork(n.ID, func(v *VMVO) bool { return v.Type == "User" && !v.Removed }) {
		for _, nid := range v.NetworkIDs {
			if nid == n.ID && v.State != vm.Stopped && v.State != vm.Destroyed && v.State != vm.Error && v.State != vm.Expunging && (!mutated(MutGCIgnoresStartingVMs) || v.State == vm.Running) {
				return false
			}
		}
	}
	return true
}

// cleanupOrphanedNetworks is PR #12409's step of the job GC. With D1 on it does what the report says:
// ages from creation, sees only Network-typed jobs, takes no lock and forces Shutdown. With D1 off it
// tries the lock without waiting, ages from the time the network entered Implementing, re-reads under
// the lock, and shuts a truly stuck network down properly.
func (s *Server) cleanupOrphanedNetworks(t *Thread) {
	nets := s.DB.Networks(func(n *NetworkVO) bool { return n.State == network.Implementing })
	if len(nets) == 0 {
		return
	}
	s.Log(t, "DEBUG", "", "Found %d networks in Implementing state, checking for orphaned networks", len(nets))
	threshold := time.Duration(s.Config.Int("job.expire.minutes")) * time.Minute
	now := s.Env.Now()
	for _, n := range nets {
		s.Env.Sleep(2 * time.Millisecond) // one query per network
		if s.Defects[D1] {
			age := now.Sub(n.Created)
			if age < threshold {
				s.Log(t, "DEBUG", NetworkObject(n.ID), "Network %d in Implementing state is only %d min old, expiration threshold: %d minutes", n.ID, int(age.Minutes()), int(threshold.Minutes()))
				continue
			}
			if s.hasPendingNetworkJob(n.ID) {
				continue
			}
			s.Log(t, "INFO", NetworkObject(n.ID), "Found orphaned network %d in Implementing state without async job. Network created: %s, age: %d minutes, expiration threshold: %d minutes. Transitioning to Shutdown state.",
				n.ID, n.Created.Format("2006-01-02T15:04:05"), int(age.Minutes()), int(threshold.Minutes()))
			if to, ok := network.Next(n.State, network.OperationFailed); ok {
				s.DB.UpdateNetworkState(t.Name, n, to, "cleanupOrphanedNetworks: OperationFailed", false)
				s.Log(t, "INFO", NetworkObject(n.ID), "Successfully transitioned orphaned network %d to Shutdown state using state machine.", n.ID)
			} else {
				s.DB.UpdateNetworkState(t.Name, n, network.Shutdown, "cleanupOrphanedNetworks: setState(Shutdown)", true)
			}
			continue
		}
		stuck := now.Sub(n.ImplementingSince)
		if stuck < threshold && !mutated(MutOrphanCleanupNoAge) {
			s.Log(t, "DEBUG", NetworkObject(n.ID), "Network %d has been Implementing for only %d min, threshold: %d minutes", n.ID, int(stuck.Minutes()), int(threshold.Minutes()))
			continue
		}
		key := NetworkLockKey(n.ID)
		if !s.DB.TryLock(key, s.ID, t.Name) {
			s.Log(t, "DEBUG", NetworkObject(n.ID), "Network %d is locked by %s: it is being implemented, not orphaned", n.ID, s.DB.LockHolder(key))
			continue
		}
		func() {
			defer s.releaseFromLockTable(t, key)
			cur := s.DB.Network(n.ID)
			if mutated(MutOrphanCleanupNoReread) {
				cur = n
			}
			if cur == nil || cur.State != network.Implementing || !cur.ImplementingSince.Equal(n.ImplementingSince) || s.hasPendingNetworkJob(n.ID) {
				return
			}
			s.Log(t, "INFO", NetworkObject(n.ID), "Found orphaned network %d: Implementing for %d minutes with its lock free. Shutting it down.", n.ID, int(stuck.Minutes()))
			s.DB.UpdateNetworkState(t.Name, cur, network.Shutdown, "cleanupOrphanedNetworks: OperationFailed", false)
			s.shutdownNetwork(t, n.ID)
		}()
	}
}

func (s *Server) hasPendingNetworkJob(id int64) bool {
	return len(s.DB.JobsFor("Network", id, func(j *JobVO) bool { return !j.Status.Done() })) > 0
}
