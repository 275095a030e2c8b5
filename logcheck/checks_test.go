package logcheck

import (
	"slices"
	"strings"
	"testing"
)

// l writes a 4.22-style line at second s of a day.
func l(s int, thread, msg string) string {
	h, m, sec := s/3600, s/60%60, s%60
	return "2025-03-01 " + two(h) + ":" + two(m) + ":" + two(sec) + ",000 DEBUG [c.c.x.Y] (" + thread + ":[ctx-1]) (logid:1) " + msg + "\n"
}

func two(n int) string { return string([]byte{byte('0' + n/10), byte('0' + n%10)}) }

const vm5 = `VM instance {"id":5,"instanceName":"i-2-5-VM","type":"User","uuid":"u5"}`
const net3 = `Network {"id": 3, "name": "t3", "uuid": "n3", "networkofferingid": 1}`

func vmTr(s int, th, from, to string) string {
	return l(s, th, vm5+" state transited from ["+from+"] to ["+to+"] with event [E]. VM's original host: null, new host: null, host before state transition: null")
}

// forcedRelease is an API job of cmd on VM 5 (job 40, still running) whose forced stop cannot reach
// the host and releases the VM anyway.
func forcedRelease(cmd string) string {
	return l(0, "API-Job-Executor-1", `Executing AsyncJob {"accountId":2,"cmd":"org.apache.cloudstack.api.command.admin.vm.`+cmd+`","id":40,"instanceId":5,"instanceType":"VirtualMachine"}`) +
		vmTr(1, "W-1", "Running", "Stopping") +
		l(2, "W-1", "Unable to actually stop i-2-5-VM but continue with release because it's a force stop") +
		l(3, "W-1", "Guest IP address 10.1.1.10 changed from [vm:5] to [free]") +
		vmTr(4, "W-1", "Stopping", "Stopped")
}

// forcedCleanup is an API job of cmd on VM 5 (job 40, still running) whose forced stop finds the VM
// Starting, cannot reach its host and releases it through cleanup.
func forcedCleanup(cmd string) string {
	return l(0, "API-Job-Executor-1", `Executing AsyncJob {"accountId":2,"cmd":"org.apache.cloudstack.api.command.admin.vm.`+cmd+`","id":40,"instanceId":5,"instanceType":"VirtualMachine"}`) +
		l(2, "W-1", "Unable to transition the state but we're moving on because it's forced stop") +
		l(2, "W-1", "Cleaning up resources for the vm i-2-5-VM in Starting state") +
		l(2, "W-1", "The nic 3 on i-2-5-VM was released according to GuestNetworkGuru, now updating record.") +
		l(2, "W-1", "Guest IP address 10.1.1.10 changed from [vm:5] to [free]") +
		l(2, "W-1", "Successfully cleaned up resources for the VM i-2-5-VM in Starting state") +
		vmTr(2, "W-1", "Starting", "Stopped")
}

// powerReport is VM 5's power state in a report at second sec.
func powerReport(sec int, power string) string {
	return l(sec, "AgentManager-Handler-1", `VM state report is updated. Host {"id":1}, `+vm5+`, power state: `+power+`.`)
}

// TestChecks: each check on a short log that breaks it, and on one that does not.
func TestChecks(t *testing.T) {
	cases := []struct {
		name string
		log  string
		want []string // checks with findings
	}{
		{"network written under another thread's lock",
			l(0, "W-1", "Lock is acquired for network id 3 as a part of network implement") +
				l(1, "W-1", net3+" state transited from [Allocated] to [Implementing] with event [ImplementNetwork]") +
				l(2, "GC-1", net3+" state transited from [Implementing] to [Shutdown] with event [OperationFailed]") +
				l(3, "W-1", net3+" state transited from [Shutdown] to [Implemented] with event [OperationSucceeded]") +
				l(4, "W-1", "Lock is released for network id 3 as a part of network implement"),
			// the implementer's last write lands on the Shutdown row: no row of the network machine
			[]string{CheckNetworkLock, CheckLinearNetwork, CheckTransitionGuard}},
		{"network writes by the lock holder only",
			l(0, "W-1", "Lock is acquired for network id 3 as a part of network implement") +
				l(1, "W-1", net3+" state transited from [Allocated] to [Implementing] with event [ImplementNetwork]") +
				l(3, "W-1", net3+" state transited from [Implementing] to [Implemented] with event [OperationSucceeded]") +
				l(4, "W-1", "Lock is released for network id 3 as a part of network implement") +
				l(5, "GC-1", net3+" state transited from [Implemented] to [Shutdown] with event [DestroyNetwork]"),
			nil},
		{"resources released, then the domain reported on",
			vmTr(0, "W-1", "Running", "Stopping") +
				l(1, "W-1", "The nic 3 on i-2-5-VM was released according to GuestNetworkGuru, now updating record.") +
				vmTr(2, "W-1", "Stopping", "Stopped") +
				l(60, "AgentManager-Handler-1", `VM state report is updated. Host {"id":1}, `+vm5+`, power state: PowerOn.`),
			[]string{CheckReleasedRunning}},
		// a caller's stopVirtualMachine forced=true on a host it cannot reach: CloudStack documents the
		// release (apache/cloudstack#6798), the operator's assertion; the same release under a destroy
		// (vm.destroy.forcestop, D3) is the server's
		{"caller's forced stop released it, then the domain reported on",
			forcedRelease("StopVMCmdByAdmin") +
				l(5, "API-Job-Executor-1", "Complete async job-40, jobStatus: SUCCEEDED, resultCode: 0, result: null") +
				powerReport(60, "PowerOn"),
			nil},
		// the same assertion when the VM is Starting (its host lost mid-start): advanceStop forced has no
		// StopRequested row, logs "Unable to transition the state but we're moving on because it's
		// forced stop" (a line that names no VM) and releases through cleanup (VirtualMachineManagerImpl
		// .advanceStop, bhouse-nexthop/cloudstack@d4da80c5)
		{"caller's forced stop of a Starting VM released it through cleanup, then the domain reported on",
			forcedCleanup("StopVMCmdByAdmin") + powerReport(60, "PowerOn"),
			nil},
		{"a destroy's forced stop of a Starting VM released it through cleanup, then the domain reported on",
			forcedCleanup("DestroyVMCmdByAdmin") + powerReport(60, "PowerOn"),
			[]string{CheckReleasedRunning}},
		{"a forced stop's cleanup ends with its thread's transition: the thread's later release is evidence",
			forcedCleanup("StopVMCmdByAdmin") + powerReport(30, "PowerOff") +
				l(40, "W-1", "The nic 3 on i-2-5-VM was released according to GuestNetworkGuru, now updating record.") +
				powerReport(60, "PowerOn"),
			[]string{CheckReleasedRunning}},
		{"a destroy's forced stop released it, then the domain reported on",
			forcedRelease("DestroyVMCmdByAdmin") + powerReport(60, "PowerOn"),
			[]string{CheckReleasedRunning}},
		{"caller's forced stop, the domain reported off, a later release, then on",
			l(0, "API-Job-Executor-1", `Executing AsyncJob {"accountId":2,"cmd":"org.apache.cloudstack.api.command.admin.vm.StopVMCmdByAdmin","id":40,"instanceId":5,"instanceType":"VirtualMachine"}`) +
				l(2, "W-1", "Unable to actually stop i-2-5-VM but continue with release because it's a force stop") +
				l(5, "API-Job-Executor-1", "Complete async job-40, jobStatus: SUCCEEDED, resultCode: 0, result: null") +
				powerReport(60, "PowerOff") +
				l(70, "W-2", "The nic 3 on i-2-5-VM was released according to GuestNetworkGuru, now updating record.") +
				powerReport(120, "PowerOn"),
			[]string{CheckReleasedRunning}},
		{"released, started again, reported on",
			l(1, "W-1", "Guest IP address 10.1.1.10 changed from [vm:5] to [free]") +
				vmTr(2, "W-2", "Stopped", "Starting") +
				l(60, "AgentManager-Handler-1", `VM state report is updated. Host {"id":1}, `+vm5+`, power state: PowerOn.`),
			nil},
		{"expunged VM's domain reported by name",
			l(1, "W-1", "Cleaning Network for Instance: i-2-5-VM") +
				vmTr(2, "W-1", "Expunging", "Expunged") +
				l(60, "AgentManager-Handler-1", "Unable to find matched VM in CloudStack DB. name: i-2-5-VM powerstate: PowerOn"),
			[]string{CheckReleasedRunning}},
		{"network shut down under a running VM",
			l(0, "W-1", "Guest IP address 10.1.3.10 of "+net3+" changed from [free] to [vm:5]") +
				vmTr(1, "W-1", "Starting", "Running") +
				l(9, "GC-1", net3+" state transited from [Implemented] to [Shutdown] with event [DestroyNetwork]"),
			[]string{CheckNetworkDown}},
		{"network shut down after its VM stopped",
			l(0, "W-1", "Guest IP address 10.1.3.10 of "+net3+" changed from [free] to [vm:5]") +
				vmTr(1, "W-1", "Starting", "Running") +
				vmTr(2, "W-1", "Running", "Stopping") +
				l(3, "W-1", "Guest IP address 10.1.3.10 of "+net3+" changed from [vm:5] to [free]") +
				vmTr(4, "W-1", "Stopping", "Stopped") +
				l(9, "GC-1", net3+" state transited from [Implemented] to [Shutdown] with event [DestroyNetwork]"),
			nil},
		{"VM stuck in Starting for two hours",
			vmTr(0, "W-1", "Stopped", "Starting") + l(7200, "main", "Ping from Routing host 1"),
			[]string{CheckStuck}},
		{"VM in Starting for ten minutes: not stuck",
			vmTr(0, "W-1", "Stopped", "Starting") + l(600, "main", "Ping from Routing host 1"),
			nil},
		{"missing VM never reconciled",
			vmTr(0, "W-1", "Starting", "Running") +
				l(10, "AgentManager-Handler-1", "Detected missing VM. host: 1, vm id: 5, power state: PowerReportMissing, last state update: 2025-03-01T00:00:00+0000") +
				l(7200, "main", "Ping from Routing host 1"),
			[]string{CheckMissing}},
		{"missing VM stopped by the sync",
			vmTr(0, "W-1", "Starting", "Running") +
				l(10, "AgentManager-Handler-1", "Detected missing VM. host: 1, vm id: 5, power state: PowerReportMissing, last state update: 2025-03-01T00:00:00+0000") +
				vmTr(70, "AgentManager-Handler-1", "Running", "Stopped") +
				l(7200, "main", "Ping from Routing host 1"),
			nil},
		{"IP handed out twice",
			l(0, "W-1", "Guest IP address 10.1.1.10 changed from [free] to [vm:5]") +
				l(1, "W-2", "Guest IP address 10.1.1.10 changed from [free] to [vm:6]"),
			[]string{CheckLinearIP}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := RunReader("t.log", strings.NewReader(c.log), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range rep.Findings {
				if !slices.Contains(got, f.Check) {
					got = append(got, f.Check)
				}
				if len(f.Evidence) == 0 || !strings.HasPrefix(f.Evidence[0].Origin, "t.log:") {
					t.Errorf("%s: evidence %+v", f.Check, f.Evidence)
				}
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(c.want))
			if !slices.Equal(got, want) {
				t.Errorf("findings %v, want %v\n%+v", got, want, rep.Findings)
			}
		})
	}
}

// TestCoverageNeverSaysNoViolationWhenUndecidable: a log without lock lines cannot decide
// network-lock; the report says so instead of "no violation".
func TestCoverageNeverSaysNoViolationWhenUndecidable(t *testing.T) {
	log := vmTr(0, "W-1", "Stopped", "Starting") + vmTr(1, "W-1", "Starting", "Running")
	rep, err := RunReader("t.log", strings.NewReader(log), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.Text(&b)
	for _, c := range rep.Coverage {
		if c.Check == CheckNetworkLock && c.Decidable {
			t.Errorf("network-lock decidable without lock lines")
		}
		if c.Check == CheckStuck && !c.Decidable {
			t.Errorf("stuck-in-transition undecidable with transitions")
		}
	}
	if !strings.Contains(b.String(), "network-lock") || !strings.Contains(b.String(), "NOT DECIDABLE: the log has no network-lock") {
		t.Errorf("report:\n%s", b.String())
	}
	if rep.ExitCode() != ExitOK {
		t.Errorf("exit %d", rep.ExitCode())
	}
}

// timeless writes a line as grep output cut after the timestamp would show it (written for this test).
func timeless(thread, msg string) string {
	return "DEBUG [c.c.v.VirtualMachineManagerImpl] (" + thread + ":ctx-1a2b job-12/job-13 ctx-3c4d) " + msg + "\n"
}

// TestTimelessLog: a log without timestamps is read in file order, never refused: the checks that
// read the order decide (here released-while-running finds the release before a report of the
// domain on), those that need time say NOT DECIDABLE, naming the timestamped lines they lack.
func TestTimelessLog(t *testing.T) {
	tr := func(from, to string) string {
		return timeless("Work-Job-Executor-4", vm5+" state transited from ["+from+"] to ["+to+"] with event [E]. VM's original host: null, new host: null, host before state transition: null")
	}
	log := tr("Running", "Stopping") +
		timeless("Work-Job-Executor-4", "The nic 3 on i-2-5-VM was released according to GuestNetworkGuru, now updating record.") +
		tr("Stopping", "Stopped") +
		timeless("AgentManager-Handler-1", `VM state report is updated. Host {"id":1}, `+vm5+`, power state: PowerOn.`) +
		timeless("AgentManager-Handler-2", `VM state report is updated. Host {"id":1}, `+vm5+`, power state: PowerOn.`) +
		tr("Stopped", "Starting")
	rep, err := RunReader("grep.log", strings.NewReader(log), Options{})
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Check != CheckReleasedRunning {
		t.Errorf("findings %+v, want released-while-running only", rep.Findings)
	}
	for _, c := range rep.Coverage {
		switch c.Check {
		case CheckStuck, CheckTransitionGuard:
			if c.Decidable || len(c.Missing) == 0 || !strings.HasPrefix(c.Missing[0], "timestamped ") {
				t.Errorf("%s: %+v, want NOT DECIDABLE for want of timestamped lines", c.Check, c)
			}
		case CheckReleasedRunning:
			if !c.Decidable {
				t.Errorf("%s: not decidable", c.Check)
			}
		}
	}
	var b strings.Builder
	rep.Text(&b)
	if !strings.Contains(b.String(), "NOT DECIDABLE: the log has no timestamped vm-transition|network-transition lines") {
		t.Errorf("report:\n%s", b.String())
	}
}

// TestTimelessTransitionStartsNoClock: in a log with times, a transition on a line whose stamp was
// lost leaves the object in its state with no clock: no stuck finding "since year one".
func TestTimelessTransitionStartsNoClock(t *testing.T) {
	log := l(0, "W-1", "Lock is acquired for network id 3 as a part of network implement") +
		"025-03-01 10:00:01,000 DEBUG [c.c.c.CapacityManagerImpl] (W-2:[ctx-2]) (logid:2) " + vm5 + " state transited from [Stopped] to [Starting] with event [StartRequested]. VM's original host: null, new host: null, host before state transition: null\n" +
		l(7200, "W-1", "Lock is released for network id 3 as a part of network implement")
	rep, err := RunReader("t.log", strings.NewReader(log), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Check == CheckStuck {
			t.Errorf("stuck finding on a timeless transition: %+v", f)
		}
	}
	if rep.Stats.Entries != 3 {
		t.Errorf("%d entries, want 3", rep.Stats.Entries)
	}
}
