package detect

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/model/history"
)

func apiJob(actor, job, detail string) history.Event {
	return jobState(actor, job, "", "IN_PROGRESS", detail)
}

// web1 (vm:2) is deployed by a client and runs on h1.
var web1Running = h{}.with(
	vmState("api", "", "Stopped"),
	apiJob("API-Job-Executor-1", "job:3", "DeployVMCmd VirtualMachine:2"),
	jobState("API-Job-Executor-1", "job:4", "", "IN_PROGRESS", "VmWorkStart VirtualMachine:2"),
	vmState("Work-Job-Executor-1", "Stopped", "Starting"),
	vmState("Work-Job-Executor-1", "Starting", "Running"),
	jobState("Work-Job-Executor-1", "job:4", "IN_PROGRESS", "SUCCEEDED", ""),
	jobState("API-Job-Executor-1", "job:3", "IN_PROGRESS", "SUCCEEDED", ""),
)

// The planted bugs of catalogue round six, as their histories show them, and the fixes: each way the
// server takes an HA-enabled VM out of service unasked, with and without its hand-over to HA. The
// power-sync cases follow handlePowerOffReportWithNoPendingJobsOnVM (VirtualMachineManagerImpl at
// bhouse-nexthop/cloudstack@d4da80c5, a 4.22-branch fork, docs/fidelity.md source A; the same in a
// later upstream copy): HA's shortcut is taken only when `(ForceHA || vm.isHaEnabled()) &&
// vm.getState() == State.Running && HaVmRestartHostUp`, and otherwise the VM is synced to Stopped.
func TestHaHandOver(t *testing.T) {
	schedule := logLine("DisconnectTask-3", "vm:2", "Schedule vm for HA: web1 (HAWork[1-HA-2-Running-Scheduled])")
	cases := []struct {
		name    string
		history h
		hostUp  bool
		want    bool // a violation
	}{
		{"a client's stop: not the server's own", web1Running.with(
			apiJob("API-Job-Executor-2", "job:5", "StopVMCmd VirtualMachine:2"),
			jobState("API-Job-Executor-2", "job:6", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2"),
			vmState("Work-Job-Executor-2", "Running", "Stopping"),
			vmState("Work-Job-Executor-2", "Stopping", "Stopped"),
			jobState("Work-Job-Executor-2", "job:6", "IN_PROGRESS", "SUCCEEDED", "")), true, false},
		{"host down, VM force-stopped and handed to HA (fixed)", web1Running.with(
			vmState("DisconnectTask-3", "Running", "Stopping"),
			vmState("DisconnectTask-3", "Stopping", "Stopped"),
			schedule), true, false},
		{"host down, VM force-stopped, no HA item (ha-host-down-stops-ha-vms)", web1Running.with(
			vmState("DisconnectTask-3", "Running", "Stopping"),
			vmState("DisconnectTask-3", "Stopping", "Stopped")), true, true},
		{"forced deleteHost through an API job on the host, no HA item (ha-host-remove-stops-ha-vms)", web1Running.with(
			apiJob("API-Job-Executor-2", "job:5", "DeleteHostCmd Host:h1"),
			vmState("API-Job-Executor-2", "Running", "Stopping"),
			vmState("API-Job-Executor-2", "Stopping", "Stopped")), true, true},
		{"forced deleteHost, handed to HA", web1Running.with(
			apiJob("API-Job-Executor-2", "job:5", "DeleteHostCmd Host:h1"),
			vmState("API-Job-Executor-2", "Running", "Stopping"),
			vmState("API-Job-Executor-2", "Stopping", "Stopped"),
			logLine("API-Job-Executor-2", "vm:2", "Schedule vm for HA: web1 (HAWork[1-HA-2-Stopped-Scheduled])")), true, false},
		{"power-off report syncs a Running HA VM to Stopped (ha-power-off-synced-without-restart)", web1Running.with(
			vmState("AgentTaskPool-4", "Running", "Stopped")), true, true},
		{"the same with ha.vm.restart.hostup off: CloudStack syncs it", web1Running.with(
			vmState("AgentTaskPool-4", "Running", "Stopped")), false, false},
		{"power sync of a Starting VM: no HA promised", h{}.with(
			vmState("api", "", "Stopped"),
			vmState("Work-Job-Executor-1", "Stopped", "Starting"),
			vmState("AgentTaskPool-4", "Starting", "Stopped")), true, false},
		{"a restart's cleanup queues a forced stop of a half-started VM, no HA item (ha-restart-cleanup-stops-without-item)", h{}.with(
			vmState("api", "", "Stopped"),
			vmState("Work-Job-Executor-1", "Stopped", "Starting"),
			jobState("main", "job:9", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2"),
			vmState("Work-Job-Executor-1", "Starting", "Stopping"),
			vmState("Work-Job-Executor-1", "Stopping", "Stopped"),
			jobState("Work-Job-Executor-1", "job:9", "IN_PROGRESS", "SUCCEEDED", "")), true, true},
		{"the restart's cleanup hands it to HA (fixed)", h{}.with(
			vmState("api", "", "Stopped"),
			vmState("Work-Job-Executor-1", "Stopped", "Starting"),
			jobState("main", "job:9", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2"),
			vmState("Work-Job-Executor-1", "Starting", "Stopping"),
			vmState("Work-Job-Executor-1", "Stopping", "Stopped"),
			jobState("Work-Job-Executor-1", "job:9", "IN_PROGRESS", "SUCCEEDED", ""),
			logLine("CancelWorkItems", "vm:2", "Schedule vm for HA: web1 (HAWork[1-HA-2-Stopped-Investigating])")), true, false},
		{"HA's own forced stop", web1Running.with(
			logLine("AgentTaskPool-3", "vm:2", "Schedule vm for HA: web1 (HAWork[1-HA-2-Running-Investigating])"),
			jobState("HA-Worker-0", "job:7", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2"),
			vmState("Work-Job-Executor-4", "Running", "Stopping"),
			vmState("Work-Job-Executor-4", "Stopping", "Stopped"),
			jobState("Work-Job-Executor-4", "job:7", "IN_PROGRESS", "SUCCEEDED", "")), true, false},
		{"an HA item of an earlier life does not cover this one", web1Running.with(
			schedule,
			vmState("DisconnectTask-3", "Running", "Stopped"),
			vmState("Work-Job-Executor-5", "Stopped", "Starting"),
			vmState("Work-Job-Executor-5", "Starting", "Running"),
			vmState("DisconnectTask-9", "Running", "Stopped")), true, true},
		{"a forced deleteHost stops a VM a client's destroy had in Stopping (deleteRoutingHost: no hand-over)", web1Running.with(
			apiJob("API-Job-Executor-2", "job:5", "DestroyVMCmd VirtualMachine:2"),
			jobState("API-Job-Executor-2", "job:6", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2"),
			vmState("Work-Job-Executor-2", "Running", "Stopping"),
			apiJob("API-Job-Executor-3", "job:7", "DeleteHostCmd Host:h1"),
			jobState("API-Job-Executor-3", "job:8", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2"),
			vmState("Work-Job-Executor-2", "Stopping", "Running"),
			jobState("Work-Job-Executor-2", "job:6", "IN_PROGRESS", "FAILED", ""),
			vmState("Work-Job-Executor-3", "Running", "Stopping"),
			vmState("Work-Job-Executor-3", "Stopping", "Stopped"),
			jobState("Work-Job-Executor-3", "job:8", "IN_PROGRESS", "SUCCEEDED", "")), true, false},
		{"the same delete of a Running VM, no HA item: judged", web1Running.with(
			apiJob("API-Job-Executor-3", "job:7", "DeleteHostCmd Host:h1"),
			jobState("API-Job-Executor-3", "job:8", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2"),
			vmState("Work-Job-Executor-3", "Running", "Stopping"),
			vmState("Work-Job-Executor-3", "Stopping", "Stopped"),
			jobState("Work-Job-Executor-3", "job:8", "IN_PROGRESS", "SUCCEEDED", "")), true, true},
		{"doDeleteHost's sweep of a VM HA restarted onto the removed host: written around the FSM, not judged", web1Running.with(
			apiJob("API-Job-Executor-2", "job:5", "DeleteHostCmd Host:h1"),
			history.Event{Kind: history.State, Actor: "API-Job-Executor-2", Object: "vm:2", From: "Running", To: "Stopped", Detail: "web1 setState host=", Direct: true}), true, false},
		{"HA's start whose job row the job GC expunged while it ran: still HA's", web1Running.with(
			logLine("AgentTaskPool-3", "vm:2", "Schedule vm for HA: web1 (HAWork[1-HA-2-Running-Investigating])"),
			jobState("HA-Worker-0", "job:7", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2"),
			vmState("Work-Job-Executor-4", "Running", "Stopping"),
			vmState("Work-Job-Executor-4", "Stopping", "Stopped"),
			jobState("Work-Job-Executor-4", "job:7", "IN_PROGRESS", "SUCCEEDED", ""),
			jobState("HA-Worker-0", "job:8", "", "IN_PROGRESS", "VmWorkStart VirtualMachine:2"),
			vmState("Work-Job-Executor-5", "Stopped", "Starting"),
			jobState("AsyncJobMgr-Heartbeat-1", "job:8", "IN_PROGRESS", "FAILED", "expunged"),
			vmState("Work-Job-Executor-5", "Starting", "Stopped")), true, false},
		{"a peer's clean-up of a left server's start: no hand-over in CloudStack", h{}.with(
			vmState("api", "", "Stopped"),
			vmState("ms2:Work-Job-Executor-1", "Stopped", "Starting"),
			vmState("Cluster-Heartbeat", "Starting", "Stopped")), true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := HaHandOver(slices.Values(tc.history), func(string) bool { return true }, tc.hostUp)
			if tc.want {
				assert.Len(t, got, 1, "%v", got)
			} else {
				assert.Empty(t, got)
			}
		})
	}
	// a VM that is not HA-enabled is promised nothing
	assert.Empty(t, HaHandOver(slices.Values(web1Running.with(vmState("DisconnectTask-3", "Running", "Stopped"))), func(string) bool { return false }, true))
}
