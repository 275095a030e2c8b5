package detect

import (
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
)

// HaHandOver judges the second half of HA's promise (ha-promise) from a recorded history: an
// HA-enabled VM the server takes out of service on its own is handed to HA. CloudStack hands it over
// wherever it stops such a VM unasked: a host found Down (HighAvailabilityManagerImpl
// .scheduleRestartForVmsOnHost), a forced deleteHost (ResourceManagerImpl.doDeleteHost), a restart's
// cleanup of a start its previous incarnation left half done (VirtualMachineManagerImpl
// .cancelWorkItems), a stalled transition (TransitionTask); and a Running VM whose domain its host
// reports off or missing is restarted by HA instead of being synced to Stopped
// (handlePowerOffReportWithNoPendingJobsOnVM, with ha.vm.restart.hostup on).
//
// A VM's move to Stopped is the server's own when neither a client nor HA made it: not the API job
// of a call on that VM (or a VM work job that job submitted), not an HA worker (or a work job it
// submitted). Each such move of an HA-enabled VM needs an HA restart item scheduled for the VM
// ("Schedule vm for HA"), before or after the move, since the VM last entered Running or Starting.
// What CloudStack stops with no hand-over is not judged:
//   - power sync of a VM that is not Running, or of any VM with ha.vm.restart.hostup off (the Java's
//     HA shortcut is for Running VMs);
//   - a peer's clean-up of the jobs of a server that left (Cluster-Heartbeat: their work rows wait
//     for that server's own restart);
//   - a state written around the state machine (doDeleteHost's last sweep of the removed host);
//   - a stop decided while the VM was Stopping (deleteRoutingHost stops such a VM, HA-enabled or
//     not): the state at the decision is the VM's when its stop's work job was submitted, or when the
//     thread that stops it began its run of changes.
//
// Power sync that moves a Running HA-enabled VM to Stopped is itself the broken promise when
// hostUpRestart (ha.vm.restart.hostup) is on.
func HaHandOver(events iter.Seq[history.Event], haEnabled func(vm string) bool, hostUpRestart bool) []invariant.Violation {
	type workJob struct {
		vm        string
		submitter string
		clientVM  string // the VM of the API job whose thread submitted it ("" if none)
		decided   string // the VM's state when it was submitted: its submitter's decision
		endedBy   string // the thread that wrote its end ("" while in progress)
	}
	type chain struct{ actor, from string } // a run of changes of one VM by one thread, and its start
	type move struct {
		vm, from, actor string
		since           int64  // the VM's last move into Running or Starting before this one
		decided         string // the VM's state when the thread that stopped it decided to
		apiVM           string // the VM of the API job the moving thread ran then, if an API job's
		at              time.Time
		job             *workJob // the VM's work job in progress at the move, if any
	}
	apiVM := map[string]string{}      // API job executor thread → the VM its current API job is on
	open := map[string]*workJob{}     // vm → its VM work job in progress (a VM's work is serialized)
	last := map[string]*workJob{}     // vm → its latest VM work job, ended or not
	jobs := map[string]*workJob{}     // job:<id> → VM work job
	entered := map[string]int64{}     // vm → seq of its last move into Running or Starting
	scheduled := map[string][]int64{} // vm → seqs of "Schedule vm for HA"
	state := map[string]string{}      // vm → its state now
	chains := map[string]chain{}      // vm → the run of changes it is in
	var moves []move
	for e := range events {
		switch e.Kind {
		case history.State:
			switch {
			case strings.HasPrefix(e.Object, "job:") && e.From == "":
				cmd, inst, _ := strings.Cut(e.Detail, " ")
				vm := ""
				if id, ok := strings.CutPrefix(inst, "VirtualMachine:"); ok {
					vm = "vm:" + id
				}
				switch {
				case strings.HasPrefix(cmd, "VmWork"):
					j := &workJob{vm: vm, submitter: e.Actor, decided: state[vm]}
					if originOf(e.Actor) == originAPI {
						j.clientVM = apiVM[e.Actor]
					}
					jobs[e.Object] = j
					if !strings.Contains(cmd, "placeholder") {
						open[vm], last[vm] = j, j
					}
				case originOf(e.Actor) == originAPI:
					apiVM[e.Actor] = vm
				}
			case strings.HasPrefix(e.Object, "job:") && e.From == "IN_PROGRESS" && e.To != "IN_PROGRESS":
				if j := jobs[e.Object]; j != nil && j.endedBy == "" {
					j.endedBy = e.Actor
					if open[j.vm] == j {
						delete(open, j.vm)
					}
				}
			case strings.HasPrefix(e.Object, "vm:"):
				if c, ok := chains[e.Object]; !ok || c.actor != e.Actor {
					chains[e.Object] = chain{e.Actor, e.From}
				}
				state[e.Object] = e.To
				if e.To == "Running" || e.To == "Starting" && e.From != "Starting" {
					entered[e.Object] = e.Seq
				}
				// a state written around the state machine is not judged: doDeleteHost's last sweep
				// (vm.setState(Stopped) for every VM still marked on the removed host) hands nothing
				// over in CloudStack either, and host-remove-with-vms says why that is the operator's
				if e.To == "Stopped" && e.From != "" && e.From != "Stopped" && !e.Direct {
					m := move{vm: e.Object, from: e.From, actor: e.Actor, since: entered[e.Object], at: e.Time, job: open[e.Object], apiVM: apiVM[e.Actor]}
					if j := last[e.Object]; m.job == nil && j != nil && originOf(j.endedBy) != originWorkJob {
						// its row ended by another thread (the job GC's expunge of an unfinished job),
						// its executor running on: the move is still that job's
						m.job = j
					}
					m.decided = chains[e.Object].from
					if m.job != nil && originOf(e.Actor) == originWorkJob {
						m.decided = m.job.decided
					}
					moves = append(moves, m)
				}
			}
		case history.Log:
			if strings.HasPrefix(e.Detail, "Schedule vm for HA: ") && strings.HasPrefix(e.Object, "vm:") {
				scheduled[e.Object] = append(scheduled[e.Object], e.Seq)
			}
		}
	}
	var out []invariant.Violation
	reported := map[string]bool{}
	for _, m := range moves {
		// a VM already Stopping when the server decided to stop it was being stopped: finishing that
		// takes nothing out of service (doDeleteHost stops an HA-enabled VM in Stopping, as the Java's
		// deleteRoutingHost does, with no hand-over)
		if reported[m.vm] || !haEnabled(m.vm) || m.decided == "Stopping" {
			continue
		}
		switch originOf(m.actor) {
		case originHA, originPeerCleanup:
			continue
		case originAPI:
			if m.apiVM == m.vm {
				continue
			}
		case originWorkJob:
			if j := m.job; j != nil {
				if originOf(j.submitter) == originHA || j.clientVM == m.vm {
					continue
				}
			}
		case originPowerSync:
			// the Java hands over only a Running VM, and only with ha.vm.restart.hostup on
			if m.from == "Running" && hostUpRestart {
				reported[m.vm] = true
				out = append(out, invariant.Violation{Invariant: invariant.HaPromise, Object: m.vm, Time: m.at,
					Message: fmt.Sprintf("%s synced HA-enabled %s from Running to Stopped on a power report; with ha.vm.restart.hostup on, HA restarts such a VM instead", m.actor, m.vm)})
			}
			continue
		}
		if slices.ContainsFunc(scheduled[m.vm], func(s int64) bool { return s > m.since }) {
			continue
		}
		reported[m.vm] = true
		out = append(out, invariant.Violation{Invariant: invariant.HaPromise, Object: m.vm, Time: m.at,
			Message: fmt.Sprintf("%s moved HA-enabled %s from %s to Stopped unasked (no client's call on it, not HA's work), and no HA restart item was scheduled for it: the server took it out of service without handing it to HA", m.actor, m.vm, m.from)})
	}
	return out
}

// The origins of a state change, by the thread that made it (CloudStack's pool names; a peer's
// threads carry its "msN:" prefix here).
type origin int

const (
	originServer      origin = iota // the server's own: start-up, a disconnect's investigation, a task
	originAPI                       // an API job's thread
	originWorkJob                   // a VM work job's executor
	originHA                        // an HA worker
	originPowerSync                 // a host's report (ping, startup)
	originPeerCleanup               // the cluster heartbeat's clean-up of a server that left
)

func originOf(actor string) origin {
	_, name, ok := strings.Cut(actor, ":")
	if !ok {
		name = actor
	}
	switch {
	case strings.HasPrefix(name, "API-Job-Executor-"):
		return originAPI
	case strings.HasPrefix(name, "Work-Job-Executor-"):
		return originWorkJob
	case strings.HasPrefix(name, "HA-Worker-"):
		return originHA
	case strings.HasPrefix(name, "AgentTaskPool-"), strings.HasPrefix(name, "AgentConnectTaskPool-"):
		return originPowerSync
	case name == "Cluster-Heartbeat":
		return originPeerCleanup
	}
	return originServer
}
