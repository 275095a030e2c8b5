package linear

import (
	"github.com/stretchr/testify/require"
	"testing"

	"github.com/csconform/csconform/model/history"
)

// h numbers events in order, as the recorder does.
func h(es ...history.Event) []history.Event {
	for i := range es {
		es[i].Seq = int64(i + 1)
	}
	return es
}

func callE(op int, actor, obj, what string) history.Event {
	return history.Event{Kind: history.Call, Op: op, Actor: actor, Object: obj, Detail: what}
}

func ret(op int, actor, obj, result string) history.Event {
	return history.Event{Kind: history.Return, Op: op, Actor: actor, Object: obj, To: result}
}

func obsVM(obj string, on, dead bool) history.Event {
	return history.Event{Kind: history.Observe, Actor: "observer", Object: obj, To: ObserveVM(on, dead)}
}

// retryLog is the API job's retry of a failed start (impl/api.go's line).
func retryLog(obj string) history.Event {
	return history.Event{Kind: history.Log, Actor: "API-Job-Executor-1", Object: obj, Level: "WARN",
		Detail: "Start of VM 2 failed, retrying once: AgentUnavailableException: Resource [Host:h2] is unreachable"}
}

func obsNet(obj, seen string) history.Event {
	return history.Event{Kind: history.Observe, Actor: "observer", Object: obj, To: seen}
}

func obsIP(obj, users string) history.Event {
	return history.Event{Kind: history.Observe, Actor: "observer", Object: obj, To: users}
}

func netW(actor, from, to, holder string) history.Event {
	return history.Event{Kind: history.State, Actor: actor, Object: "network:1", From: from, To: to, LockHolder: holder}
}

func lock(actor, to string) history.Event {
	e := history.Event{Kind: history.Lock, Actor: actor, Object: "networks1", To: to}
	if to == "released" {
		e.From = "held"
	}
	return e
}

func fault(kind, obj string, begin bool) history.Event {
	e := history.Event{Kind: history.Fault, Actor: "fault", Object: obj}
	if begin {
		e.To = kind
	} else {
		e.From = kind
	}
	return e
}

func ipW(from, to string) history.Event {
	return history.Event{Kind: history.IP, Actor: "ms", Object: "ip:10.1.1.10", From: from, To: to}
}

type modelCase struct {
	name    string
	events  []history.Event
	illegal string // the object that must fail, "" for none
}

// modelCases are small histories, each legal or illegal in one object (TestModels; seeds of
// FuzzPartitions).
func modelCases() []modelCase {
	const v = "vm:2"
	const w = "vm:7" // a VM of its own, deployed in the case
	deployed := []history.Event{callE(1, "c1", "network:1", "deploy web1"), obsVM(v, false, false), obsVM(v, true, false), ret(1, "c1", v, "ok"), obsVM(v, true, false)}
	with := func(es ...history.Event) []history.Event {
		return h(append(append([]history.Event(nil), deployed...), es...)...)
	}
	return []modelCase{
		{"destroy returned ok but the domain runs on with a dead record (D3)",
			with(callE(2, "c2", v, "destroyExpunge web1"), obsVM(v, false, false), ret(2, "c2", v, "ok"), obsVM(v, true, true)), v},
		{"destroy returned ok and the domain is gone",
			with(callE(2, "c2", v, "destroyExpunge web1"), obsVM(v, false, false), obsVM(v, false, true), ret(2, "c2", v, "ok"), obsVM(v, false, true)), ""},
		{"stop returned ok but the domain still runs",
			with(callE(2, "c2", v, "stop web1"), ret(2, "c2", v, "ok"), obsVM(v, true, false)), v},
		{"a failed stop's StopCommand finishes on the host after the failure was returned (a graceful agent restart cancels it on the server, not on the host)",
			with(callE(2, "c2", v, "stop web1"), obsVM(v, true, false), ret(2, "c2", v, "failed"), obsVM(v, true, false), obsVM(v, false, false)), ""},
		{"a failed start's domain boots after the failure was returned (the agent went away with the StartCommand running)",
			with(callE(2, "c2", v, "stop web1"), ret(2, "c2", v, "ok"), obsVM(v, false, false),
				callE(3, "c3", v, "start web1"), ret(3, "c3", v, "failed"), obsVM(v, false, false), obsVM(v, true, false)), ""},
		{"a failed start does not explain a domain that runs again after a successful stop since",
			with(callE(2, "c2", v, "start web1"), ret(2, "c2", v, "failed"), obsVM(v, true, false),
				callE(3, "c3", v, "stop web1"), obsVM(v, true, false), ret(3, "c3", v, "ok"), obsVM(v, false, false), obsVM(v, true, false)), v},
		{"a failed stop does not explain a domain that stops after a successful start since",
			with(callE(2, "c2", v, "stop web1"), ret(2, "c2", v, "failed"), callE(3, "c3", v, "start web1"), obsVM(v, true, false), ret(3, "c3", v, "ok"),
				obsVM(v, true, false), callE(4, "c4", v, "stop web1"), ret(4, "c4", v, "ok"), obsVM(v, false, false), obsVM(v, true, false)), v},
		{"the domain stops with no stop, destroy or fault",
			with(obsVM(v, false, false)), v},
		{"the domain stops after a crash",
			with(fault("crash", v, true), fault("crash", v, false), obsVM(v, false, false)), ""},
		{"the domain stops when its host loses power",
			with(fault("host-power-off", "host:h1,"+v, true), obsVM(v, false, false)), ""},
		{"after a power-off the domain runs again with no start",
			with(fault("host-power-off", "host:h1,"+v, true), obsVM(v, false, false), obsVM(v, true, false)), v},
		{"after a power-off HA's worker starts it again (a VmWorkStart job of HA-Worker-1)",
			with(fault("host-power-off", "host:h1,"+v, true), obsVM(v, false, false),
				history.Event{Kind: history.State, Actor: "HA-Worker-1", Object: "job:9", To: "IN_PROGRESS", Detail: "VmWorkStart VirtualMachine:2"},
				obsVM(v, true, false)), ""},
		{"a VmWorkStart of any other thread is no excuse",
			with(fault("host-power-off", "host:h1,"+v, true), obsVM(v, false, false),
				history.Event{Kind: history.State, Actor: "Work-Job-Executor-3", Object: "job:9", To: "IN_PROGRESS", Detail: "VmWorkStart VirtualMachine:2"},
				obsVM(v, true, false)), v},
		{"a failed start may leave the domain running; a later destroy must still stop it (D2)",
			h(callE(1, "c1", "network:1", "deploy web1"), obsVM(v, true, false), ret(1, "c1", v, "failed"), obsVM(v, true, false),
				callE(2, "c2", v, "destroyExpunge web1"), ret(2, "c2", v, "ok"), obsVM(v, true, true)), v},
		{"a deploy's first attempt, given up on, boots late; a stop stops it; the API's retry boots it again (explore --profile fixed, seed 6)",
			h(callE(1, "c1", "network:1", "deploy web7"), obsVM(w, false, false), retryLog(w), obsVM(w, true, false),
				callE(2, "c2", w, "forceStop web7"), ret(2, "c2", w, "ok"), obsVM(w, false, false), obsVM(w, true, false), ret(1, "c1", w, "ok"), obsVM(w, true, false)), ""},
		{"without the API's retry a deploy boots its domain once",
			h(callE(1, "c1", "network:1", "deploy web7"), obsVM(w, false, false), obsVM(w, true, false),
				callE(2, "c2", w, "forceStop web7"), ret(2, "c2", w, "ok"), obsVM(w, false, false), obsVM(w, true, false), ret(1, "c1", w, "ok"), obsVM(w, true, false)), w},
		{"a retried deploy explains two boots, not three",
			h(callE(1, "c1", "network:1", "deploy web7"), obsVM(w, false, false), retryLog(w), obsVM(w, true, false),
				callE(2, "c2", w, "forceStop web7"), ret(2, "c2", w, "ok"), obsVM(w, false, false), obsVM(w, true, false),
				callE(3, "c3", w, "forceStop web7"), ret(3, "c3", w, "ok"), obsVM(w, false, false), obsVM(w, true, false), ret(1, "c1", w, "ok")), w},
		{"a retry logged before the start was called is not its retry",
			h(obsVM(w, false, false), retryLog(w), callE(1, "c1", w, "start web7"), obsVM(w, true, false),
				callE(2, "c2", w, "forceStop web7"), ret(2, "c2", w, "ok"), obsVM(w, false, false), obsVM(w, true, false), ret(1, "c1", w, "ok")), w},
		// Issue 33 (explore --profile fixed --seed 13000218515498104751, an earlier generator): a
		// deploy's StartCommand, forwarded to a host cut off for 90 s, outlives its API job (a
		// management-server restart cancels it: the deploy fails); two destroyExpunge calls meanwhile
		// fail at the server without sending the host anything — advanceStop refuses a VM in Starting
		// ("We cannot stop ... when it is in state Starting", VirtualMachineManagerImpl.advanceStop,
		// apache/cloudstack 00114e8b3f9640cd01512a70f5981cc7c343abaa,
		// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java); the link
		// heals, the StartCommand boots the domain, HA's forced stop stops it.
		{"a failed deploy's domain boots after later calls the server refused without a command (issue 33)",
			refusedAfterFailedDeploy(w, ret(3, "c3", w, "failed"), obsVM(w, false, false)), ""},
		{"a failed deploy's domain boots while a later destroyExpunge waits behind a forced stop, which stops it (issue 33 with vm.destroy.forcestop)",
			h(callE(1, "c1", "network:1", "deploy web7"), obsVM(w, false, false),
				callE(2, "c2", w, "destroyExpunge web7"), ret(1, "c1", w, "failed"), obsVM(w, false, false),
				callE(3, "c3", w, "destroyExpunge web7"), obsVM(w, false, false), obsVM(w, true, false), obsVM(w, false, false),
				ret(2, "c2", w, "failed"), obsVM(w, false, false), obsVM(w, false, true), ret(3, "c3", w, "ok"), obsVM(w, false, true)), ""},
		{"a later call that returned ok closes the failed deploy's window: its command reached the host after the boot",
			refusedAfterFailedDeploy(w, ret(3, "c3", w, "ok"), obsVM(w, false, false)), w},
		{"refused calls explain no boot with no start at all",
			with(callE(2, "c2", v, "stop web1"), ret(2, "c2", v, "ok"), obsVM(v, false, false),
				callE(3, "c3", v, "destroyExpunge web1"), ret(3, "c3", v, "failed"), obsVM(v, false, false),
				callE(4, "c4", v, "destroyExpunge web1"), ret(4, "c4", v, "failed"), obsVM(v, false, false), obsVM(v, true, false)), v},
		{"a failed deploy's late boot cannot revive a destroyed record",
			refusedAfterFailedDeploy(w, history.Event{Kind: history.Return, Op: 3, Actor: "c3", Object: w, To: "ok"}, obsVM(w, false, true)), w},
		// recoverVirtualMachine (UserVmManagerImpl.recoverVirtualMachine, apache/cloudstack main as
		// stored): a Destroyed record, not expunged, is live again (Stopped), its domain off
		{"a recovered VM's record is live again and it starts",
			with(callE(2, "c2", v, "destroy web1"), obsVM(v, false, false), ret(2, "c2", v, "ok"), obsVM(v, false, true),
				callE(3, "c3", v, "recover web1"), ret(3, "c3", v, "ok"), obsVM(v, false, false),
				callE(4, "c4", v, "start web1"), obsVM(v, true, false), ret(4, "c4", v, "ok")), ""},
		{"a failed recover leaves the record dead",
			with(callE(2, "c2", v, "destroy web1"), obsVM(v, false, false), ret(2, "c2", v, "ok"), obsVM(v, false, true),
				callE(3, "c3", v, "recover web1"), ret(3, "c3", v, "failed"), obsVM(v, false, false)), v},
		{"a recover does not start the domain",
			with(callE(2, "c2", v, "destroy web1"), obsVM(v, false, false), ret(2, "c2", v, "ok"), obsVM(v, false, true),
				callE(3, "c3", v, "recover web1"), ret(3, "c3", v, "ok"), obsVM(v, true, false)), v},
		// a live migration (VirtualMachineManagerImpl.migrate): the guest runs throughout, on one host
		// or the other
		{"a migration keeps the domain running",
			with(callE(2, "c2", v, "migrate web1"), obsVM(v, true, false), ret(2, "c2", v, "ok"), obsVM(v, true, false)), ""},
		{"a migration that returned ok but the domain is gone",
			with(callE(2, "c2", v, "migrate web1"), ret(2, "c2", v, "ok"), obsVM(v, false, false)), v},
		{"a migration that returned ok cannot revive a stopped domain",
			with(callE(2, "c2", v, "stop web1"), ret(2, "c2", v, "ok"), obsVM(v, false, false),
				callE(3, "c3", v, "migrate web1"), ret(3, "c3", v, "ok"), obsVM(v, true, false)), v},
		{"a migration cannot succeed on a dead record",
			with(callE(2, "c2", v, "destroy web1"), obsVM(v, false, false), ret(2, "c2", v, "ok"), obsVM(v, false, true),
				callE(3, "c3", v, "migrate web1"), ret(3, "c3", v, "ok")), v},
		{"a failed migration may have lost the domain (its cleanup stops the destination's)",
			with(callE(2, "c2", v, "migrate web1"), ret(2, "c2", v, "failed"), obsVM(v, false, false)), ""},
		// A start attempt whose StartAnswer succeeded and whose changeState(vm, OperationSucceeded,
		// ...) then failed — a compare-and-set on the copy the attempt read, the row moved meanwhile —
		// throws ConcurrentOperationException, and the attempt's finally (startedVm == null) calls
		// cleanup, whose StopCommand stops the domain it had just booted
		// (VirtualMachineManagerImpl.orchestrateStart, apache/cloudstack@3156c4ba62c07c065d1aac119b0dac31242797b3,
		// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java; impl
		// TestStartSuccessIsACompareAndSetOnTheAttemptsCopy). One failed or unknown start can so turn
		// the domain on and then off. explore --profile fixed --scheduler random --seed
		// 2020275968866430551: a deploy's work job expunged by the job GC (job.expire.minutes 10)
		// while its thread waited vm.op.wait.interval on a router; power sync moved the VM to Stopped;
		// the thread woke, booted the domain, failed its compare-and-set and stopped it.
		{"a deploy whose job was expunged boots its domain and its own cleanup stops it",
			h(callE(1, "c1", "network:1", "deploy web7"), obsVM(w, false, false), expunged(1, w), obsVM(w, false, false),
				obsVM(w, true, false), obsVM(w, false, false)), ""},
		{"a failed start boots its domain and its own cleanup stops it",
			h(callE(1, "c1", "network:1", "deploy web7"), obsVM(w, false, false), obsVM(w, true, false), obsVM(w, false, false),
				ret(1, "c1", w, "failed"), obsVM(w, false, false)), ""},
		{"a failed start's cleanup stops its domain once: it does not boot it again",
			h(callE(1, "c1", "network:1", "deploy web7"), obsVM(w, false, false), obsVM(w, true, false), obsVM(w, false, false),
				ret(1, "c1", w, "failed"), obsVM(w, false, false), obsVM(w, true, false)), w},
		{"a failed start's cleanup does not explain the stop of a domain a later start booted and returned ok",
			h(callE(1, "c1", "network:1", "deploy web7"), obsVM(w, false, false), ret(1, "c1", w, "failed"), obsVM(w, true, false),
				callE(2, "c2", w, "start web7"), ret(2, "c2", w, "ok"), obsVM(w, true, false), obsVM(w, false, false)), w},
		{"a successful start's domain stops with no stop, destroy or fault",
			h(callE(1, "c1", "network:1", "deploy web7"), obsVM(w, false, false), obsVM(w, true, false), ret(1, "c1", w, "ok"),
				obsVM(w, false, false)), w},
		{"a start that never returned may take effect later",
			h(callE(1, "c1", v, "start web1"), obsVM(v, false, false), obsVM(v, true, false)), ""},
		{"a start cannot succeed on a dead record",
			h(callE(1, "c1", v, "destroy web1"), ret(1, "c1", v, "ok"), callE(2, "c2", v, "start web1"), ret(2, "c2", v, "ok")), v},
		{"someone writes inside a critical section (D1)",
			h(netW("api", "", "Allocated", ""), lock("w1", "held"), netW("w1", "Allocated", "Implementing", "w1"),
				netW("gc", "Implementing", "Shutdown", "w1"), netW("w1", "Shutdown", "Allocated", "w1"), lock("w1", "released")), "network:1"},
		{"critical sections one after another",
			h(netW("api", "", "Allocated", ""), lock("w1", "held"), netW("w1", "Allocated", "Implementing", "w1"),
				netW("w1", "Implementing", "Implemented", "w1"), lock("w1", "released"),
				lock("gc", "held"), netW("gc", "Implemented", "Shutdown", "gc"), netW("gc", "Shutdown", "Allocated", "gc"), lock("gc", "released")), ""},
		{"a section cut short by a management-server restart, and the next server's thread of the same name",
			h(netW("api", "", "Allocated", ""), lock("w1", "held"), netW("w1", "Allocated", "Implementing", "w1"),
				history.Event{Kind: history.Fault, Actor: "fault", Object: "ms", To: "ms-restart"},
				lock("w2", "held"), netW("w2", "Implementing", "Shutdown", "w2"), netW("w2", "Shutdown", "Allocated", "w2"), lock("w2", "released"),
				lock("w1", "held"), netW("w1", "Allocated", "Implementing", "w1"), netW("w1", "Implementing", "Implemented", "w1"), lock("w1", "released")), ""},
		// deleteNetwork (NetworkOrchestrator.destroyNetwork, apache/cloudstack@0035c613): a delete that
		// returned ok wrote Destroy and removed the row; nothing writes a removed row, and the API
		// deploys no VM into it (networkids names no removed network)
		{"a deleted network: Destroy written, then its delete returns ok",
			h(netW("api", "", "Allocated", ""), callE(1, "c1", "network:1", "deleteNetwork net1"),
				netW("j1", "Allocated", "Destroy", ""), ret(1, "c1", "", "ok")), ""},
		{"a delete that returned ok without the network ever going Destroy",
			h(netW("api", "", "Allocated", ""), callE(1, "c1", "network:1", "deleteNetwork net1"), ret(1, "c1", "", "ok")), "network:1"},
		{"a deleted network written again",
			h(netW("api", "", "Allocated", ""), callE(1, "c1", "network:1", "deleteNetwork net1"),
				netW("j1", "Allocated", "Destroy", ""), ret(1, "c1", "", "ok"),
				lock("w1", "held"), netW("w1", "Destroy", "Implementing", "w1"), lock("w1", "released")), "network:1"},
		{"a deleted network that later gets a NIC",
			h(netW("api", "", "Allocated", ""), callE(1, "c1", "network:1", "deleteNetwork net1"),
				netW("j1", "Allocated", "Destroy", ""), ret(1, "c1", "", "ok"),
				callE(2, "c2", "network:1", "deploy web1"), ret(2, "c2", "vm:2", "ok")), "network:1"},
		{"a deploy refused after the delete, and a NIC that came before it",
			h(netW("api", "", "Allocated", ""), callE(1, "c1", "network:1", "allocate web1"), ret(1, "c1", "vm:2", "ok"),
				callE(2, "c2", "network:1", "deleteNetwork net1"), netW("j1", "Allocated", "Destroy", ""), ret(2, "c2", "", "ok"),
				callE(3, "c3", "network:1", "deploy web3"), ret(3, "c3", "", "failed")), ""},
		{"a refused delete leaves the network to its next implementation",
			h(netW("api", "", "Allocated", ""), lock("w1", "held"), netW("w1", "Allocated", "Implementing", "w1"),
				callE(1, "c1", "network:1", "deleteNetwork net1"), ret(1, "c1", "", "failed"),
				netW("w1", "Implementing", "Implemented", "w1"), lock("w1", "released")), ""},
		{"a delete that never returned, and a deploy beside it",
			h(netW("api", "", "Allocated", ""), callE(1, "c1", "network:1", "deleteNetwork net1"),
				callE(2, "c2", "network:1", "deploy web1"), ret(2, "c2", "vm:2", "ok")), ""},
		// a look at the row after the delete (issue 45: what an operation promised at its end)
		{"a delete that returned ok, and the records still list the network",
			h(netW("api", "", "Allocated", ""), callE(1, "c1", "network:1", "deleteNetwork net1"),
				netW("j1", "Allocated", "Destroy", ""), ret(1, "c1", "", "ok"), obsNet("network:1", "listed")), "network:1"},
		{"a delete that returned ok, and the row is removed",
			h(netW("api", "", "Allocated", ""), callE(1, "c1", "network:1", "deleteNetwork net1"),
				netW("j1", "Allocated", "Destroy", ""), ret(1, "c1", "", "ok"), obsNet("network:1", "removed")), ""},
		{"a refused delete, and the records still list the network",
			h(netW("api", "", "Allocated", ""), callE(1, "c1", "network:1", "deleteNetwork net1"),
				ret(1, "c1", "", "failed"), obsNet("network:1", "listed")), ""},
		{"a row removed while the network was still Allocated",
			h(netW("api", "", "Allocated", ""), callE(1, "c1", "network:1", "deleteNetwork net1"),
				obsNet("network:1", "removed"), ret(1, "c1", "", "failed")), "network:1"},
		{"a delete that never returned removed the row, seen before the delete's Destroy is known to the client",
			h(netW("api", "", "Allocated", ""), callE(1, "c1", "network:1", "deleteNetwork net1"),
				netW("j1", "Allocated", "Destroy", ""), obsNet("network:1", "removed")), ""},
		{"a row seen removed, then listed again",
			h(netW("api", "", "Allocated", ""), callE(1, "c1", "network:1", "deleteNetwork net1"),
				netW("j1", "Allocated", "Destroy", ""), obsNet("network:1", "removed"), obsNet("network:1", "listed")), "network:1"},
		{"an address freed while its domain runs",
			h(ipW("free", "vm:2"), obsIP("ip:10.1.1.10", "vm:2"), ipW("vm:2", "free"), obsIP("ip:10.1.1.10", "vm:2")), "ip:10.1.1.10"},
		{"an address used by two running domains",
			h(ipW("free", "vm:2"), obsIP("ip:10.1.1.10", "vm:2,vm:5")), "ip:10.1.1.10"},
		{"an address handed on after its domain stopped",
			h(ipW("free", "vm:2"), obsIP("ip:10.1.1.10", "vm:2"), obsIP("ip:10.1.1.10", ""), ipW("vm:2", "free"), ipW("free", "vm:5"), obsIP("ip:10.1.1.10", "vm:5")), ""},
	}
}

// expunged is the recorder's line for a call whose job the job GC expunged under it (harness
// Recorder.EndOp): the call stays open on the VM.
func expunged(op int, obj string) history.Event {
	return history.Event{Kind: history.Log, Level: "WARN", Op: op, Actor: "c1", Object: obj, Detail: "deploy: job 13 is gone: its outcome is unknown"}
}

// refusedAfterFailedDeploy is issue 33's history in small: a deploy of w fails (its API job cancelled
// by a server restart) while a destroyExpunge runs; the destroyExpunge fails (refused: the VM is
// Starting); a second call on the VM (op 3, a destroyExpunge) ends as end says, then the observation
// after; then the deploy's domain comes on and HA's forced stop (a VmWorkStop job of HA-Worker-4)
// stops it.
func refusedAfterFailedDeploy(w string, end ...history.Event) []history.Event {
	es := []history.Event{callE(1, "c1", "network:1", "deploy web7"), obsVM(w, false, false),
		callE(2, "c2", w, "destroyExpunge web7"), ret(1, "c1", w, "failed"), obsVM(w, false, false),
		ret(2, "c2", w, "failed"), obsVM(w, false, false),
		callE(3, "c3", w, "destroyExpunge web7"), obsVM(w, false, false)}
	es = append(es, end...)
	dead := end[len(end)-1].To == ObserveVM(false, true)
	es = append(es, obsVM(w, true, dead),
		history.Event{Kind: history.State, Actor: "HA-Worker-4", Object: "job:21", To: "IN_PROGRESS", Detail: "VmWorkStop VirtualMachine:7"},
		obsVM(w, false, dead))
	return h(es...)
}

func TestModels(t *testing.T) {
	for _, c := range modelCases() {
		t.Run(c.name, func(t *testing.T) {
			rs := Check(Partitions(c.events), 0)
			bad := Illegal(rs)
			switch {
			case c.illegal == "" && len(bad) > 0:
				t.Fatalf("%s is illegal:\n%v", bad[0].Object, bad[0].Explain)
			case c.illegal != "" && (len(bad) != 1 || bad[0].Object != c.illegal):
				t.Fatalf("want only %s illegal, got %+v", c.illegal, bad)
			}
			for _, b := range bad {
				if len(b.Explain) == 0 {
					t.Errorf("%s: no explanation", b.Object)
				}
			}
		})
	}
}

func TestVisualizeFailingPartition(t *testing.T) {
	ev := h(ipW("free", "vm:2"), obsIP("ip:10.1.1.10", "vm:2,vm:5"))
	bad := Illegal(Check(Partitions(ev), 0))
	if len(bad) != 1 {
		t.Fatalf("want one illegal partition, got %d", len(bad))
	}
	if err := bad[0].Visualize(t.TempDir() + "/ip.html"); err != nil {
		t.Fatal(err)
	}
}

// TestDeployWhoseJobWasExpungedStaysOpen: the job GC of a short job.expire.minutes expunges a
// deploy's API job while the client polls it (AsyncJobManagerImpl's GC,
// getExpiredUnfinishedJobs); the client never learns the outcome and the recorder leaves the call
// open, saying so in a log line that names the op and its VM. A deploy's call names its network (no
// VM exists yet), so without the log line the VM's history has no start at all and its domain
// coming on is illegal; with it the open deploy may take effect any time after its call.
func TestDeployWhoseJobWasExpungedStaysOpen(t *testing.T) {
	const v = "vm:10"
	gone := history.Event{Kind: history.Log, Level: "WARN", Op: 1, Actor: "client-1", Object: v, Detail: "deploy: job 13 is gone: its outcome is unknown"}
	hist := func(withLog bool) []history.Event {
		es := []history.Event{callE(1, "client-1", "network:1", "deploy vm1"), obsVM(v, false, false)}
		if withLog {
			es = append(es, gone)
		}
		return append(es, obsVM(v, true, false))
	}
	require.NotEmpty(t, Illegal(Check(Partitions(hist(false)), 0)), "a domain with no start is illegal")
	require.Empty(t, Illegal(Check(Partitions(hist(true)), 0)), "the open deploy explains the domain")
}
