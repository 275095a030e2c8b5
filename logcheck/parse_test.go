package logcheck

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lines below are written for these tests in the shapes of log-formats.md (ids, names and
// uuids invented); none is copied from a public thread.

func entries(t *testing.T, text string) []*Entry {
	t.Helper()
	r := NewReader("t.log", strings.NewReader(text))
	var out []*Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		out = append(out, e)
	}
}

func TestSkeleton(t *testing.T) {
	at := time.Date(2025, 3, 1, 10, 0, 0, 123e6, time.UTC)
	cases := []struct {
		name, line                        string
		level, logger, thread, ctx, logid string
		msg, host                         string
	}{
		{"4.22 with logid and bracketed context",
			`2025-03-01 10:00:00,123 DEBUG [o.a.c.e.o.NetworkOrchestrator] (Work-Job-Executor-4:[ctx-1a2b3c4d, job-40/job-41, ctx-5e6f7a8b]) (logid:1a2b3c4d) Lock is acquired for network id 7 as a part of network implement`,
			"DEBUG", "o.a.c.e.o.NetworkOrchestrator", "Work-Job-Executor-4", "[ctx-1a2b3c4d, job-40/job-41, ctx-5e6f7a8b]", "1a2b3c4d",
			"Lock is acquired for network id 7 as a part of network implement", ""},
		{"empty logid on agent handler, empty context",
			`2025-03-01 10:00:00,123 INFO  [c.c.a.m.AgentManagerImpl] (AgentManager-Handler-1:[]) (logid:) Host 13 is up`,
			"INFO", "c.c.a.m.AgentManagerImpl", "AgentManager-Handler-1", "[]", "", "Host 13 is up", ""},
		{"4.5 without logid, plain context, last-three logger",
			`2025-03-01 10:00:00,123 WARN  [cloud.vm.VirtualMachinePowerStateSyncImpl] (AgentManager-Handler-5:null) Process VM state report. host: 44, number of records in report: 26`,
			"WARN", "cloud.vm.VirtualMachinePowerStateSyncImpl", "AgentManager-Handler-5", "null", "", "Process VM state report. host: 44, number of records in report: 26", ""},
		{"old work job context",
			`2025-03-01 10:00:00,123 DEBUG [c.c.v.VirtualMachineManagerImpl] (Work-Job-Executor-73:ctx-f0150000 job-31342/job-31343 ctx-74900000) Start completed for VM i-2-6-VM`,
			"DEBUG", "c.c.v.VirtualMachineManagerImpl", "Work-Job-Executor-73", "ctx-f0150000 job-31342/job-31343 ctx-74900000", "", "Start completed for VM i-2-6-VM", ""},
		{"thread name with a space",
			`2025-03-01 10:00:00,123 DEBUG [c.c.a.m.ClusteredAgentManagerImpl] (ClusteredAgentManager Timer:ctx-11112222) (logid:11112222) Scanning for agents`,
			"DEBUG", "c.c.a.m.ClusteredAgentManagerImpl", "ClusteredAgentManager Timer", "ctx-11112222", "11112222", "Scanning for agents", ""},
		{"direct agent context with colons and commas",
			`2025-03-01 10:00:00,123 DEBUG [c.c.a.t.Request] (DirectAgent-345:ctx-aa11bb22 10.0.0.81, job-2149/job-2150, cmd: CopyCommand) (logid:aa11bb22) Seq 3-77: Executing request`,
			"DEBUG", "c.c.a.t.Request", "DirectAgent-345", "ctx-aa11bb22 10.0.0.81, job-2149/job-2150, cmd: CopyCommand", "aa11bb22", "Seq 3-77: Executing request", ""},
		{"HA worker, inner-class logger",
			`2025-03-01 10:00:00,123 INFO  [o.a.c.f.j.i.AsyncJobManagerImpl$5] (HA-Worker-2:[ctx-0000aaaa, work-16563]) (logid:0000aaaa) HA is now restarting VM 84`,
			"INFO", "o.a.c.f.j.i.AsyncJobManagerImpl$5", "HA-Worker-2", "[ctx-0000aaaa, work-16563]", "0000aaaa", "HA is now restarting VM 84", ""},
		{"host-name prefix",
			`srv01 2025-03-01 10:00:00,123 ERROR [c.c.h.HighAvailabilityManagerExtImpl] (HA-Worker-1:ctx-01) (logid:01) Host 4 is down`,
			"ERROR", "c.c.h.HighAvailabilityManagerExtImpl", "HA-Worker-1", "ctx-01", "01", "Host 4 is down", "srv01"},
		{"grep prefix",
			`./vmops.log:2825865:2025-03-01 10:00:00,123 DEBUG [c.c.v.ClusteredVirtualMachineManagerImpl] (Work-Job-Executor-9:ctx-09 job-5/job-6) (logid:09) VM start attempt #1`,
			"DEBUG", "c.c.v.ClusteredVirtualMachineManagerImpl", "Work-Job-Executor-9", "ctx-09 job-5/job-6", "09", "VM start attempt #1", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			es := entries(t, c.line+"\n")
			if len(es) != 1 {
				t.Fatalf("%d entries", len(es))
			}
			e := es[0]
			got := []string{e.Level, e.Logger, e.Thread, e.Context, e.LogID, e.Msg, e.Host}
			want := []string{c.level, c.logger, c.thread, c.ctx, c.logid, c.msg, c.host}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("field %d: got %q, want %q", i, got[i], want[i])
				}
			}
			if !e.Time.Equal(at) {
				t.Errorf("time %v", e.Time)
			}
		})
	}
}

func TestJournaldAndMultiline(t *testing.T) {
	text := "2025-12-01 09:00:00,000 INFO  [c.c.a.m.AgentManagerImpl] (main:null) first\n" +
		"Dec 22 12:42:29 kvm7 java[21477]: WARN  [kvm.resource.LibvirtComputingResource] (agentRequest-Handler-3:null) Failed to get domain\n" +
		"2025-12-22 12:42:30,001 ERROR [o.a.c.e.o.NetworkOrchestrator] (Work-Job-Executor-2:ctx-02 job-3/job-4) (logid:02) Caught exception: unable to implement\n" +
		"com.cloud.exception.ResourceUnavailableException: Resource [DataCenter:1] is unreachable\n" +
		"\tat org.apache.cloudstack.engine.orchestration.NetworkOrchestrator.implementNetwork(NetworkOrchestrator.java:1500)\n" +
		"\tat com.cloud.vm.VirtualMachineManagerImpl.orchestrateStart(VirtualMachineManagerImpl.java:1200)\n" +
		"Caused by: java.lang.NullPointerException\n" +
		"\t... 12 more\n" +
		"2025-12-22 12:42:31,000 DEBUG [c.c.v.VirtualMachineManagerImpl] (Work-Job-Executor-2:ctx-02) (logid:02) a message hard-wrapped\n" +
		"by a copy at eighty columns\n"
	es := entries(t, text)
	if len(es) != 4 {
		t.Fatalf("%d entries, want 4", len(es))
	}
	j := es[1]
	if j.Host != "kvm7" || j.Level != "WARN" || j.Logger != "kvm.resource.LibvirtComputingResource" || j.Time.Year() != 2025 || j.Time.Month() != time.December || j.Time.Day() != 22 {
		t.Errorf("journald: %+v", j)
	}
	if es[2].Frames != 5 || es[2].Line != 3 {
		t.Errorf("stack trace: %d frames at line %d, want 5 at 3", es[2].Frames, es[2].Line)
	}
	if es[3].Msg != "a message hard-wrapped by a copy at eighty columns" {
		t.Errorf("wrapped: %q", es[3].Msg)
	}
}

func TestObjectRenderings(t *testing.T) {
	vms := []struct{ s, key string }{
		{"Stopping VM[User|i-2-6-VM] now", "vm:6"},
		{"Stopping VM[DomainRouter|r-93-VM] now", "vm:93"},
		{`VM instance {id: "30806", name: "v-30806-VM", uuid: "u-1", type="ConsoleProxy"} is up`, "vm:30806"},
		{`VM instance {"id":3,"instanceName":"i-2-3-VM","type":"User","uuid":"u-2"}`, "vm:3"},
		{`VM VM instance {"id":3,"instanceName":"i-2-3-VM","state":"Running","type":"User","uuid":"u-2"} is at Running`, "vm:3"},
		{`VM instance {"id":12,"instanceName":null,"type":"User","uuid":"u-3"}`, "vm:12"},
		{"report. host: 1, vm id: 43, power state: PowerOn", "vm:43"},
		{"outdated for VM id: 93", "vm:93"},
		{"cleanup vm id=5251 done", "vm:5251"},
		{"HA is now restarting VM 84", "vm:84"},
		{"Start completed for VM i-2-6-VM", "vm:6"},
		{"Stopping router r-93-VM", "vm:93"},
		{"vm id: 3(2f0c0000-0000-4000-8000-000000000003)", "vm:3"},
	}
	for _, c := range vms {
		if k, _ := vmRef(c.s); k != c.key {
			t.Errorf("vmRef(%q) = %q, want %q", c.s, k, c.key)
		}
	}
	hosts := []struct{ s, key string }{
		{"Process VM state report. host: 1, number", "host:1"},
		{"Investigating why host 13 has disconnected", "host:13"},
		{"for host id: 1 done", "host:1"},
		{"MgmtId: 9, via: 14(kvm-a), Ver: v1", "host:14"},
		{`Process VM state report. Host {"id":1,"name":"kvm-a","type":"Routing","uuid":"u"}, number`, "host:1"},
		{"PingInvestigator was able to determine host 44692-virt-hv041 is in Disconnected", "host:44692-virt-hv041"},
	}
	for _, c := range hosts {
		if k := hostRef(c.s); k != c.key {
			t.Errorf("hostRef(%q) = %q, want %q", c.s, k, c.key)
		}
	}
	nets := []struct{ s, key string }{
		{"Lock is acquired for Ntwk[207|Guest|8] as a part of network implement", "network:207"},
		{"Changing active number of nics for network id=204 on -1", "network:204"},
		{"Network id=295 is not ready for GC", "network:295"},
		{`Network {"id": 295, "name": "tier1", "uuid": "u", "networkofferingid": 21} is ready`, "network:295"},
	}
	for _, c := range nets {
		if k := networkRef(c.s); k != c.key {
			t.Errorf("networkRef(%q) = %q, want %q", c.s, k, c.key)
		}
	}
}

// TestFacts: one line per known kind and era, the fact it gives.
func TestFacts(t *testing.T) {
	const h = "2025-03-01 10:00:00,123 DEBUG [c.c.v.VirtualMachinePowerStateSyncImpl] (AgentManager-Handler-2:[]) (logid:) "
	const ho = "2016-03-01 10:00:00,123 DEBUG [c.c.v.VirtualMachinePowerStateSyncImpl] (Work-Job-Executor-1:ctx-01 job-1/job-2) "
	cases := []struct {
		name, text      string
		kind, obj, from string
		to              string
	}{
		{"new transition", h + `VM instance {"id":3,"instanceName":"i-2-3-VM","type":"User","uuid":"u"} state transited from [Running] to [Running] with event [FollowAgentPowerOnReport]. VM's original host: Host {"id":1,"name":"kvm-a","type":"Routing","uuid":"u"}, new host: Host {"id":2,"name":"kvm-b","type":"Routing","uuid":"v"}, host before state transition: null`,
			KVMTransition, "vm:3", "Running", "Running"},
		{"new transition, null hosts", h + `VM instance {"id":4,"instanceName":"i-2-4-VM","type":"User","uuid":"u"} state transited from [Starting] to [Stopped] with event [OperationFailed]. VM's original host: null, new host: null, host before state transition: null`,
			KVMTransition, "vm:4", "Starting", "Stopped"},
		{"old transition after a line naming the VM", ho + "Start completed for VM VM[User|i-2-6-VM]\n" + ho + "VM state transitted from :Starting to Stopped with event: OperationFailedvm's original host id: 1 new host id: null host id before state transition: 1",
			KVMTransition, "vm:6", "Starting", "Stopped"},
		{"report, old", ho + "Process VM state report. host: 44692, number of records in report: 26", KPowerReport, "host:44692", "", ""},
		{"report, new", h + `Process VM state report. Host {"id":1,"name":"kvm-a","type":"Routing","uuid":"u"}, number of records in report: 2. VMs: [3:PowerOff, 4:PowerOn]]`, KPowerReport, "host:1", "", ""},
		{"report updated, old", ho + "VM state report is updated. host: 1, vm id: 43, power state: PowerReportMissing", KPowerUpdate, "vm:43", "", "PowerReportMissing"},
		{"report updated, 4.20", ho + "VM state report is updated. host: 1, vm id: 43, power state: PowerOn.", KPowerUpdate, "vm:43", "", "PowerOn"},
		{"report updated, new", h + `VM state report is updated. Host {"id":1,"name":"kvm-a"}, VM instance {"id":43,"instanceName":"i-2-43-VM","type":"User","uuid":"u"}, power state: PowerOff.`, KPowerUpdate, "vm:43", "", "PowerOff"},
		{"missing, epoch", ho + "Detected missing VM. host: 1, vm id: 4, power state: PowerReportMissing, last state update: 1443985566000", KMissing, "vm:4", "", "PowerReportMissing"},
		{"missing, ISO", h + "Detected missing VM. host: 1, vm id: 4(i-2-4-VM), power state: PowerReportMissing, last state update: 2025-02-25T06:58:13+0000", KMissing, "vm:4", "", "PowerReportMissing"},
		{"grace, old", ho + "vm id: 4 - time since last state update(60167ms) has not passed graceful period yet", KGrace, "vm:4", "", ""},
		{"grace, new", h + `VM instance {"id":4,"instanceName":"i-2-4-VM","type":"User","uuid":"u"} - time since last state update(60941 ms) has passed graceful period.`, KGrace, "vm:4", "", ""},
		{"outdated", h + "Detected missing VM but power state is outdated, wait for another process report run for VM id: 93", KPowerOutcome, "vm:93", "", ""},
		{"no pending jobs, new", h + "VM i-2-43-VM is at Running and we received a PowerReportMissing report while there is no pending jobs on it", KPowerOutcome, "vm:43", "", ""},
		{"no pending jobs, old", ho + "VM i-2-43-VM is at Running and we received a power-off report while there is no pending jobs on it", KPowerOutcome, "vm:43", "", ""},
		{"sync-ed", h + "VM i-2-94-VM is sync-ed to at Stopped state according to power-off report from hypervisor", KPowerOutcome, "vm:94", "", ""},
		{"postpone", h + "There is pending job or HA tasks working on the VM. vm: i-2-7-VM, postpone power-change report by resetting power-change counters.", KPowerOutcome, "vm:7", "", ""},
		{"unmanaged domain", h + "Unable to find matched VM in CloudStack DB. name: i-2-9-VM powerstate: PowerOn", KUnknownDomain, "vm:9", "", "PowerOn"},
		{"seq sending stop", h + `Seq 2-5748563449361727501: Sending  { Cmd , MgmtId: 9, via: 2(kvm-b), Ver: v1, Flags: 100011, [{"com.cloud.agent.api.StopCommand":{"isProxy":false,"vmName":"i-2-6-VM","wait":0}}] }`, KCommand, "vm:6", "", "sent"},
		{"seq sending start, numbers", ho + `Seq 2-11: Sending  { Cmd , MgmtId: 9, via: 2, Ver: v1, Flags: 100011, [{"com.cloud.agent.api.StartCommand":{"vm":{"id":6,"name":"i-2-6-VM"},"vmName":"i-2-6-VM","wait":0}}] }`, KCommand, "vm:6", "", "sent"},
		{"seq received", h + "Seq 2-5748563449361727501: Received:  { Ans: , MgmtId: 9, via: 2(kvm-b), Ver: v1, Flags: 10, { StopAnswer } }", KCommand, "", "", "answered"},
		{"seq timeout", h + "Timed out on Seq 4-1234:  { Cmd , MgmtId: 9, via: 4, Ver: v1, Flags: 100011 }", KTimeout, "", "", "timeout"},
		{"operation timeout", h + "Operation timed out: Commands 7 to Host 4 timed out after 100", KTimeout, "", "", "timeout"},
		{"job complete", h + "Complete async job-73973, jobStatus: SUCCEEDED, resultCode: 0, result: null", KJob, "job:73973", "", "SUCCEEDED"},
		{"job old object", ho + "Executing AsyncJobVO {id:32445, userId: 2, accountId: 2, instanceType: None}", KJob, "job:32445", "", ""},
		{"job 4.22 object", h + `Executing AsyncJob {"accountId":2,"cmd":"org.apache.cloudstack.api.command.admin.vm.StartVMCmdByAdmin","id":77,"userId":2}`, KJob, "job:77", "", ""},
		{"lock implement", h + "Lock is acquired for network id 204 as a part of network implement", KLock, "networks204", "", "held"},
		{"lock shutdown, old object", ho + "Lock is acquired for network Ntwk[207|Guest|8] as a part of network shutdown", KLock, "networks207", "", "held"},
		{"lock released", h + "Lock is released for network id 204 as a part of network implement", KLock, "networks204", "", "released"},
		{"shutdown to router", h + "Sending network shutdown to VirtualRouter", KNetDecision, "", "", ""},
		{"not ready for GC", h + "Network id=295 is not ready for GC as it has vms that are not Stopped at the moment", KNetDecision, "network:295", "", ""},
		{"active nics", h + "Changing active number of nics for network id=204 on -1", KNetDecision, "network:204", "", ""},
		{"stopping router", h + "Stopping router r-93-VM", KNetDecision, "vm:93", "", ""},
		{"investigating, old", ho + "Investigating why host 13 has disconnected with event PingTimeout", KHostEvent, "host:13", "", ""},
		{"investigating, new", h + `Investigating why host Host {"id":13,"name":"kvm-c","type":"Routing","uuid":"u"} has disconnected with event PingTimeout`, KHostEvent, "host:13", "", ""},
		{"ping investigator", h + "PingInvestigator was able to determine host 44692 is in Disconnected", KHostEvent, "host:44692", "", ""},
		{"agent disconnected, host up", h + "Agent is disconnected but the host is still up: 12-kvm3", KHostEvent, "host:12-kvm3", "", ""},
		{"orphan cleanup", h + "Successfully transitioned orphaned network 5 to Shutdown state using state machine.", KOrphan, "network:5", "", ""},
		{"nic released", h + "The nic 3 on i-2-2-VM was released according to GuestNetworkGuru, now updating record.", KRelease, "vm:2", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			es := entries(t, c.text+"\n")
			x := NewExtractor()
			var facts []Fact
			for _, e := range es {
				fs, known, bad := x.Extract(e, e.Thread)
				if bad != "" {
					t.Fatalf("malformed: %s", bad)
				}
				if known {
					facts = fs
				}
			}
			if len(facts) == 0 {
				t.Fatalf("no fact")
			}
			f := facts[0]
			if f.Kind != c.kind || f.Object != c.obj || f.From != c.from || f.To != c.to {
				t.Errorf("got %s %q %q->%q, want %s %q %q->%q", f.Kind, f.Object, f.From, f.To, c.kind, c.obj, c.from, c.to)
			}
		})
	}
}

// TestWorkJobContext: a thread's context naming job-N/job-M gives the work job once per thread.
func TestWorkJobContext(t *testing.T) {
	text := "2025-03-01 10:00:00,000 DEBUG [c.c.v.VirtualMachineManagerImpl] (Work-Job-Executor-4:[ctx-1, job-40/job-41, ctx-2]) (logid:1) VM start attempt #1\n" +
		"2025-03-01 10:00:01,000 DEBUG [c.c.v.VirtualMachineManagerImpl] (Work-Job-Executor-4:[ctx-1, job-40/job-41, ctx-2]) (logid:1) still the same job\n" +
		"2016-03-01 10:00:02,000 DEBUG [c.c.v.VirtualMachineManagerImpl] (Work-Job-Executor-73:ctx-f0 job-31342/job-31343 ctx-74) next\n"
	x := NewExtractor()
	var got []string
	for _, e := range entries(t, text) {
		fs, _, _ := x.Extract(e, e.Thread)
		for _, f := range fs {
			if f.Kind == KJob {
				got = append(got, f.Object+" "+f.Detail)
			}
		}
	}
	want := []string{"job:41 work job of job-40 on Work-Job-Executor-4", "job:31343 work job of job-31342 on Work-Job-Executor-73"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestMalformedAndUnknownAreCounted(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "management-server.log")
	text := "2025-03-01 10:00:00,000 DEBUG [c.c.v.d.VMInstanceDaoImpl] (w-1:null) VM state transitted from :Starting with nothing else\n" +
		"2025-03-01 10:00:01,000 DEBUG [c.c.x.Y] (w-1:null) something we do not model\n" +
		"2025-03-01 10:00:02,000 DEBUG [c.c.v.VirtualMachinePowerStateSyncImpl] (w-2:null) Process VM state report. number of records in report: 3\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Run([]string{p}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stats.Malformed != 2 || rep.Stats.Unknown != 1 {
		t.Errorf("malformed %d unknown %d, want 2 and 1", rep.Stats.Malformed, rep.Stats.Unknown)
	}
	if rep.Malformed[0].Origin != p+":1" || rep.Malformed[1].Origin != p+":3" {
		t.Errorf("origins %v", rep.Malformed)
	}
	if rep.ExitCode() != ExitUndecided {
		t.Errorf("exit %d, want %d (nothing decidable)", rep.ExitCode(), ExitUndecided)
	}
}

// TestMergeByTime: two servers' logs (one gzipped) interleave by time, each line keeps its origin,
// and a lock held on one server is seen by a write on the other.
func TestMergeByTime(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "ms1", "management-server.log")
	b := filepath.Join(dir, "ms2", "management-server.log.2025-03-01.gz")
	os.MkdirAll(filepath.Dir(a), 0o755)
	os.MkdirAll(filepath.Dir(b), 0o755)
	os.WriteFile(a, []byte(
		"2025-03-01 10:00:00,000 DEBUG [o.a.c.e.o.NetworkOrchestrator] (Work-Job-Executor-1:[ctx-1]) (logid:1) Lock is acquired for network id 5 as a part of network implement\n"+
			"2025-03-01 10:00:02,000 DEBUG [o.a.c.e.o.NetworkOrchestrator] (Work-Job-Executor-1:[ctx-1]) (logid:1) Lock is released for network id 5 as a part of network implement\n"), 0o644)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("2025-03-01 10:00:01,000 INFO  [o.a.c.e.o.NetworkOrchestrator] (AsyncJobMgr-Heartbeat-1:[ctx-2]) (logid:2) Successfully transitioned orphaned network 5 to Shutdown state using state machine.\n"))
	zw.Close()
	os.WriteFile(b, gz.Bytes(), 0o644)
	rep, err := Run([]string{a, b}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// the network-lock finding, and the orphan cleanup's guard (it wrote without the lock)
	if len(rep.Findings) != 2 || rep.Findings[0].Check != CheckNetworkLock || rep.Findings[1].Check != CheckTransitionGuard {
		t.Fatalf("findings %+v", rep.Findings)
	}
	ev := rep.Findings[0].Evidence
	if len(ev) != 2 || ev[0].Origin != a+":1" || ev[1].Origin != b+":1" {
		t.Errorf("evidence %+v", ev)
	}
	if !strings.Contains(rep.Findings[0].Message, "ms2/AsyncJobMgr-Heartbeat-1") {
		t.Errorf("message %q does not name the server", rep.Findings[0].Message)
	}
}

// TestNULPaddingAfterEntries: NUL bytes after real entries (a log copied while written) are skipped
// and counted; before any entry they make the file bad input.
func TestNULPaddingAfterEntries(t *testing.T) {
	good := "2025-03-01 10:00:00,000 INFO  [a] (b:c) one\n"
	rep, err := RunReader("t.log", strings.NewReader(good+"\x00\x00\x00\x00\n"+good), Options{})
	if err != nil || rep.Stats.Unparsable != 1 || rep.Stats.Entries != 2 {
		t.Fatalf("err %v, stats %+v", err, rep)
	}
	if _, err := RunReader("t.log", strings.NewReader("\x00\x00\n"+good), Options{}); err == nil || !strings.Contains(err.Error(), "t.log:1: binary data") {
		t.Errorf("err %v", err)
	}
}

// TestJournaldPaddedDay: journald pads a one-digit day with a space.
func TestJournaldPaddedDay(t *testing.T) {
	es := entries(t, "Dec  2 01:02:03 kvm7 java[1]: INFO  [kvm.resource.LibvirtComputingResource] (main:null) up\n")
	if len(es) != 1 || es[0].Host != "kvm7" || es[0].Time.Day() != 2 || es[0].Msg != "up" {
		t.Fatalf("%+v", es)
	}
}

// TestPastedLines: what copies of a log in issue threads do to its lines — a lost or mangled
// timestamp, a line quoted as code, two entries glued where a newline was lost, a context
// hard-wrapped, stack frames on the journal. Every entry is kept in file order; one without a
// usable timestamp has HasTime false.
func TestPastedLines(t *testing.T) {
	text := "DEBUG [c.c.v.VirtualMachineManagerImpl] (Work-Job-Executor-4:ctx-1a2b job-12/job-13 ctx-3c4d) Start completed for VM i-2-6-VM\n" +
		"INFO could not be parsed as an entry: no logger follows the level\n" +
		"025-03-14 18:57:40,347 INFO  [c.c.v.VirtualMachineManagerImpl] (Work-Job-Executor-81:ctx-e1 job-4/job-5 ctx-a6) (logid:e1) Unable to contact resource.\n" +
		"`2026-07-06 11:09:02,217 INFO  [c.c.a.m.ClusteredAgentManagerImpl] (AgentTaskPool-1:[ctx-95]) (logid:e2) The agent from host Host {\"id\":1} state determined is Down`\n" +
		"2023-01-05 18:26:54,150 ERROR [c.c.v.VmWorkJobDispatcher] (Work-Job-Executor-4:ctx-bd job-516/job-517) (logid:1c) Unable to complete the job\n" +
		"ce due to Unable to start VM, not retrying2023-01-05 18:26:54,158 DEBUG [c.c.v.VmWorkJobDispatcher] (Work-Job-Executor-4:ctx-bd job-516/job-517) (logid:1c) Done with run of VM work job: com.cloud.vm.VmWorkStart for VM 99, job origin: 516\n" +
		"2018-10-16 11:23:19,102 ERROR [c.c.n.r.VirtualNetworkApplianceManagerImpl] (Work-Job-Executor-147:ctx-edf7f753 job-3221/job-3222 ctx-ea\n" +
		"279b8a) (logid:e2c57742) process hasn't exited\n" +
		"Sep 03 01:12:08 mgmt1 java[2720]: ERROR [c.c.v.VmWorkJobDispatcher] (Work-Job-Executor-2:ctx-01 job-7/job-8) (logid:01) Unable to complete the job\n" +
		"Sep 03 01:12:08 mgmt1 java[2720]: com.cloud.exception.InsufficientServerCapacityException: Unable to create a deployment\n" +
		"Sep 03 01:12:08 mgmt1 java[2720]:         at com.cloud.vm.VirtualMachineManagerImpl.orchestrateStart(VirtualMachineManagerImpl.java:1063)\n" +
		"> 2025-04-11 09:46:30,192 DEBUG [c.c.a.t.Request] (AgentManager-Handler-7:[ctx-00]) (logid:) quoted\n"
	r := NewReader("t.log", strings.NewReader(text))
	var es []*Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	type want struct {
		line            int
		hasTime         bool
		thread, ctxHas  string
		msg, host, logg string
	}
	wants := []want{
		{1, false, "Work-Job-Executor-4", "job-12/job-13", "Start completed for VM i-2-6-VM INFO could not be parsed as an entry: no logger follows the level", "", "c.c.v.VirtualMachineManagerImpl"},
		{3, false, "Work-Job-Executor-81", "job-4/job-5", "Unable to contact resource.", "", "c.c.v.VirtualMachineManagerImpl"},
		{4, true, "AgentTaskPool-1", "ctx-95", `The agent from host Host {"id":1} state determined is Down`, "", "c.c.a.m.ClusteredAgentManagerImpl"},
		{5, true, "Work-Job-Executor-4", "job-516/job-517", "Unable to complete the job ce due to Unable to start VM, not retrying", "", "c.c.v.VmWorkJobDispatcher"},
		{6, true, "Work-Job-Executor-4", "job-516/job-517", "Done with run of VM work job: com.cloud.vm.VmWorkStart for VM 99, job origin: 516", "", "c.c.v.VmWorkJobDispatcher"},
		{7, true, "Work-Job-Executor-147", "job-3221/job-3222", "process hasn't exited", "", "c.c.n.r.VirtualNetworkApplianceManagerImpl"},
		// the journal's line takes the last year seen (2018)
		{9, true, "Work-Job-Executor-2", "job-7/job-8", "Unable to complete the job com.cloud.exception.InsufficientServerCapacityException: Unable to create a deployment", "mgmt1", "c.c.v.VmWorkJobDispatcher"},
		{12, true, "AgentManager-Handler-7", "ctx-00", "quoted", "", "c.c.a.t.Request"},
	}
	if len(es) != len(wants) {
		for _, e := range es {
			t.Logf("%d %q", e.Line, e.Msg)
		}
		t.Fatalf("%d entries, want %d", len(es), len(wants))
	}
	for i, w := range wants {
		e := es[i]
		if e.Line != w.line || e.HasTime != w.hasTime || e.Thread != w.thread || !strings.Contains(e.Context, w.ctxHas) || e.Msg != w.msg || e.Host != w.host || e.Logger != w.logg {
			t.Errorf("entry %d: line %d time %v thread %q ctx %q msg %q host %q logger %q; want %+v", i, e.Line, e.HasTime, e.Thread, e.Context, e.Msg, e.Host, e.Logger, w)
		}
	}
	if es[6].Frames != 2 {
		t.Errorf("journal entry: %d continuation lines, want 2", es[6].Frames)
	}
	if r.Stats.Lines != 12 || r.Stats.Orphans != 0 {
		t.Errorf("stats %+v: want 12 physical lines (a glued line counted once), no orphans", r.Stats)
	}
}

// TestNewKinds: the kinds the corpus of pasted logs taught the extractor (testdata/corpus): one line
// of each, in the wording of the version that logs it (written for this test).
func TestNewKinds(t *testing.T) {
	const h = "2025-03-01 10:00:00,123 DEBUG [c.c.x.Y] (HA-Worker-2:[ctx-1, work-8]) (logid:1) "
	cases := []struct{ msg, kind, obj string }{
		{"Processing HAWork[858-HA-111750-Running-Investigating]", KHA, "vm:111750"},
		{"Processing work HAWork[8-HA-7-Running-Investigating]", KHA, "vm:7"},
		{"HA on VM[User|i-8114-111750-VM]", KHA, "vm:111750"},
		{`HA is now restarting VM instance {"id":866,"instanceName":"i-29-866-VM","state":"Running","type":"User","uuid":"u"} on Host {"id":9}`, KHA, "vm:866"},
		{`checking if agent (Host {"id":2,"name":"kvm2","type":"Routing","uuid":"u"}) is alive`, KHostEvent, "host:2"},
		{`The agent from host Host {"id":1,"name":"kvm1","type":"Routing","uuid":"u"} state determined is Down`, KHostEvent, "host:1"},
		{"Transitioned host HA state from:Degraded to:Suspect due to event:PeriodicRecheckResourceActivity for the host id:38", KHostEvent, "host:38"},
		{"SimpleInvestigator unable to determine the state of the host.  Moving on.", KHostEvent, ""},
		{"VM state report. host: 19, vm id: 960, power state: PowerOn", KPowerState, "vm:960"},
		{`Detected out-of-band stop of a HA enabled VM VM instance {"id":866,"instanceName":"i-29-866-VM","state":"Running","type":"User","uuid":"u"}, will schedule restart.`, KPowerOutcome, "vm:866"},
		{`Unable to orchestrate start VM instance {id: "30806", name: "v-30806-VM", uuid: "u", type="ConsoleProxy"} due to [no usable volumes].`, KStartFail, "vm:30806"},
		{`The guru did not like the answers so stopping VM instance {id: "99", name: "r-99-VM", uuid: "u", type="DomainRouter"}`, KStartFail, "vm:99"},
		{"Run VM work job: com.cloud.vm.VmWorkStop for VM 6893, job origin: 124772", KVMStep, "vm:6893"},
		{`Execute VM work job: com.cloud.vm.VmWorkStop{"cleanup":true,"userId":449,"accountId":335,"vmId":6893,"handlerName":"VirtualMachineManagerImpl"}`, KVMStep, "vm:6893"},
		{`Released nic: NicProfile {"id":1124,"vmId":659} for vm VM instance {"id":659,"instanceName":"v-659-VM","type":"ConsoleProxy","uuid":"u"}`, KRelease, "vm:659"},
		{"Starting network Ntwk[200|Public|1]...", KNetDecision, "network:200"},
		{"Starting router VM[DomainRouter|r-70-VM]", KRouter, "vm:70"},
		{"Host 4 is disconnecting with event PingTimeout", KHostEvent, "host:4"},
		{"Deregistering link for 4 with state Alert", KHostEvent, "host:4"},
		{"Sending Disconnect to listener: com.cloud.vm.ClusteredVirtualMachineManagerImpl", KHostEvent, ""},
		{"Asking VirtualRouter to release NicProfile[19-9-384fb78f-0000-4000-8000-000000000000-10.1.1.9-vlan://untagged]", KRelease, "vm:9"},
	}
	for _, c := range cases {
		es := entries(t, h+c.msg+"\n")
		fs, known, bad := NewExtractor().Extract(es[0], es[0].Thread)
		if !known || bad != "" {
			t.Errorf("%q: known %v, malformed %q", c.msg, known, bad)
			continue
		}
		found := false
		for _, f := range fs {
			if f.Kind == c.kind && f.Object == c.obj {
				found = true
			}
		}
		if !found {
			t.Errorf("%q: facts %+v, want %s on %q", c.msg, fs, c.kind, c.obj)
		}
	}
	// a class that logs nothing a check reads is recognised by its logger, in either rendering; an
	// unknown class stays unknown
	for _, c := range []struct{ logger, kind string }{
		{"c.c.d.DeploymentPlanningManagerImpl", KNoState}, {"cloud.deploy.DeploymentPlanningManagerImpl", KNoState},
		{"o.a.c.e.o.VolumeOrchestrator", KStorage}, {"o.a.c.f.j.i.AsyncJobManagerImpl$5", KJob}, {"c.c.x.Unheard", ""},
	} {
		es := entries(t, "2025-03-01 10:00:00,123 DEBUG ["+c.logger+"] (t-1:null) something said\n")
		fs, known, _ := NewExtractor().Extract(es[0], "t-1")
		if c.kind == "" {
			if known {
				t.Errorf("%s: known %+v, want unknown", c.logger, fs)
			}
			continue
		}
		if !known || len(fs) != 1 || fs[0].Kind != c.kind {
			t.Errorf("%s: %+v, want %s", c.logger, fs, c.kind)
		}
	}
	// a work job's line names the VM for the old transition line that follows on its thread
	es := entries(t, "2016-03-01 10:00:00,000 DEBUG [c.c.v.VmWorkJobDispatcher] (Work-Job-Executor-9:ctx-1 job-1/job-2) Run VM work job: com.cloud.vm.VmWorkStart for VM 84, job origin: 1\n"+
		"2016-03-01 10:00:01,000 DEBUG [c.c.c.CapacityManagerImpl] (Work-Job-Executor-9:ctx-1 job-1/job-2 ctx-3) VM state transitted from :Starting to Stopped with event: OperationFailedvm's original host id: null new host id: null host id before state transition: null\n")
	x := NewExtractor()
	x.Extract(es[0], "Work-Job-Executor-9")
	fs, _, bad := x.Extract(es[1], "Work-Job-Executor-9")
	if bad != "" || len(fs) == 0 || fs[0].Kind != KVMTransition || fs[0].Object != "vm:84" {
		t.Errorf("old transition after the work job's line: %+v %q", fs, bad)
	}
}

// TestExpandServerLogDirectory: a directory gives its management-server logs (the live one and its
// rotations, gzipped or not) and leaves out the rest, each with its reason.
func TestExpandServerLogDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"management-server.log", "management-server.log.2025-02-23.gz", "management-server.log-20250222.gz",
		"access.log", "apilog.log", "management-server.out", "management-server.log.2025-02-21.xz"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(dir, "old"), 0o755)
	files, skipped, err := Expand([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, filepath.Base(f))
	}
	if strings.Join(got, " ") != "management-server.log management-server.log-20250222.gz management-server.log.2025-02-23.gz" {
		t.Errorf("files %q", got)
	}
	why := map[string]string{}
	for _, s := range skipped {
		why[filepath.Base(s.Path)] = s.Reason
	}
	for n, want := range map[string]string{"access.log": "not a management-server log", "apilog.log": "not a management-server log",
		"management-server.out": "not a management-server log", "management-server.log.2025-02-21.xz": "compressed as .xz", "old": "a directory"} {
		if !strings.Contains(why[n], want) {
			t.Errorf("%s: skipped %q, want %q", n, why[n], want)
		}
	}
	if len(skipped) != 5 {
		t.Errorf("skipped %+v", skipped)
	}
	// a file given by name is read whatever its name; a directory with no server log is bad input
	if files, _, err := Expand([]string{filepath.Join(dir, "access.log")}); err != nil || len(files) != 1 {
		t.Errorf("a file by name: %v %v", files, err)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "access.log"), []byte("x\n"), 0o644)
	if _, _, err := Expand([]string{other}); err == nil || !strings.Contains(err.Error(), "no management-server log in the directory") {
		t.Errorf("err %v", err)
	}
}

// A directory's files of other names are read by their content (issue 47: a directory of plain
// *.log excerpts exited 2 without naming what it skipped): one in log4j's layout is a server's log,
// the rest are skipped with the reason, and a directory with none names what it left out.
func TestExpandSniffsOtherNames(t *testing.T) {
	dir := t.TempDir()
	line := "2026-12-07 10:00:00,000 DEBUG [c.c.v.VirtualMachineManagerImpl] (Work-Job-Executor-1:ctx-1 job-1/job-2 ctx-3) (logid:abc) VM start attempt #1\n"
	for name, text := range map[string]string{"ms1.log": line, "notes.txt": "what I saw\n", "excerpt.log": "no layout here\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	files, skipped, err := Expand([]string{dir})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "ms1.log")}, files)
	require.Len(t, skipped, 2)
	for _, s := range skipped {
		assert.Contains(t, s.Reason, "none of its first 20 entries is in the log's layout", s.Path)
	}

	none := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(none, "notes.txt"), []byte("what I saw\n"), 0o644))
	_, _, err = Expand([]string{none})
	var nl *NoLogError
	require.ErrorAs(t, err, &nl)
	assert.Contains(t, err.Error(), "notes.txt: not a management-server log")
	assert.NotContains(t, err.Error(), "\n", "bad input is one line")
}

// The closing hint of an undecided run names what the log lacks: an excerpt already at DEBUG is not
// told to raise its level (issue 47), one with no DEBUG entry is.
func TestUndecidedHintNamesWhatLacks(t *testing.T) {
	for _, c := range []struct{ level, want string }{
		{"DEBUG", "the log is at DEBUG, but carries none of the lines"},
		{"INFO", "it has no DEBUG entries"},
	} {
		line := "2026-12-07 10:00:00,000 " + c.level + " [c.c.v.VirtualMachineManagerImpl] (Work-Job-Executor-1:ctx-1 job-1/job-2 ctx-3) (logid:abc) VM start attempt #1\n"
		rep, err := RunReader("x.log", strings.NewReader(line), Options{})
		require.NoError(t, err)
		require.Equal(t, ExitUndecided, rep.ExitCode())
		var b strings.Builder
		rep.Text(&b)
		assert.Contains(t, b.String(), c.want, c.level)
	}
}
