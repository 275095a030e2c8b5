package logcheck

import (
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// genLog generates a management-server.log on the fly (never stored): a DEBUG mix of the kinds
// logcheck reads — VM lifecycles with their transitions, network implements under the lock, power
// reports, agent commands and answers, jobs, guest IPs, unknown lines and a stack trace now and
// then — over a bounded set of objects, so that a long log is many lifecycles of the same VMs.
// It samples the live heap every 16 MB to show that memory stays flat (LOGCHECK_BENCH_TRACE=1
// prints every sample).
type genLog struct {
	size, done int64
	buf        []byte
	off        int
	cycle      int64
	t          time.Time
	peakHeap   uint64
	nextSample int64
}

func newGenLog(size int64) *genLog {
	return &genLog{size: size, t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (g *genLog) Read(p []byte) (int, error) {
	if g.off == len(g.buf) {
		if g.done >= g.size {
			return 0, io.EOF
		}
		if g.done >= g.nextSample {
			// the live heap (after a collection): what the reader and checker hold
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			g.peakHeap = max(g.peakHeap, ms.HeapAlloc)
			if os.Getenv("LOGCHECK_BENCH_TRACE") != "" {
				println("heap", g.done>>20, "MB read:", ms.HeapAlloc>>20, "MB live")
			}
			g.nextSample += 16 << 20
		}
		g.buf, g.off = g.fill(g.buf[:0]), 0
	}
	n := copy(p, g.buf[g.off:])
	g.off += n
	g.done += int64(n)
	return n, nil
}

func (g *genLog) line(b []byte, level, logger, thread, msg1 string, parts ...string) []byte {
	g.t = g.t.Add(7 * time.Millisecond)
	b = g.t.AppendFormat(b, "2006-01-02 15:04:05,000")
	b = append(b, ' ')
	b = append(b, level...)
	b = append(b, " ["...)
	b = append(b, logger...)
	b = append(b, "] ("...)
	b = append(b, thread...)
	b = append(b, ":[ctx-0a1b2c3d, job-"...)
	b = strconv.AppendInt(b, g.cycle, 10)
	b = append(b, "]) (logid:0a1b2c3d) "...)
	b = append(b, msg1...)
	for _, p := range parts {
		b = append(b, p...)
	}
	return append(b, '\n')
}

// fill appends one VM's lifecycle (about 4 KB).
func (g *genLog) fill(b []byte) []byte {
	g.cycle++
	c := g.cycle
	vm := strconv.FormatInt(c%500+1, 10)
	name := "i-2-" + vm + "-VM"
	net := strconv.FormatInt(c%50+1, 10)
	host := strconv.FormatInt(c%8+1, 10)
	ip := "10.1." + strconv.FormatInt(c%50, 10) + "." + strconv.FormatInt(c%200+10, 10)
	vmj := `VM instance {"id":` + vm + `,"instanceName":"` + name + `","type":"User","uuid":"6c1e0000-0000-4000-8000-000000000001"}`
	hj := `Host {"id":` + host + `,"name":"kvm` + host + `","type":"Routing","uuid":"7d2f0000-0000-4000-8000-000000000001"}`
	nj := `Network {"id": ` + net + `, "name": "tier` + net + `", "uuid": "8e3a0000-0000-4000-8000-000000000001", "networkofferingid": 21}`
	w := "Work-Job-Executor-" + strconv.FormatInt(c%16, 10)
	tr := func(from, to, ev string) []byte {
		return g.line(b, "DEBUG", "c.c.v.d.VMInstanceDaoImpl", w, vmj, " state transited from [", from, "] to [", to, "] with event [", ev, "]. VM's original host: ", hj, ", new host: ", hj, ", host before state transition: null")
	}
	b = g.line(b, "DEBUG", "o.a.c.f.j.i.AsyncJobManagerImpl", "API-Job-Executor-1", `Executing AsyncJob {"accountId":2,"cmd":"StartVMCmd","id":`, strconv.FormatInt(c, 10), `,"userId":2}`)
	b = tr("Stopped", "Starting", "StartRequested")
	b = g.line(b, "DEBUG", "o.a.c.e.o.NetworkOrchestrator", w, "Lock is acquired for network id ", net, " as a part of network implement")
	b = g.line(b, "DEBUG", "c.c.n.d.NetworkDaoImpl", w, nj, " state transited from [Allocated] to [Implementing] with event [ImplementNetwork]")
	b = g.line(b, "DEBUG", "o.a.c.e.o.NetworkOrchestrator", w, "Asking GuestNetworkGuru to implement ", nj)
	b = g.line(b, "DEBUG", "c.c.n.d.NetworkDaoImpl", w, nj, " state transited from [Implementing] to [Implemented] with event [OperationSucceeded]")
	b = g.line(b, "DEBUG", "o.a.c.e.o.NetworkOrchestrator", w, "Lock is released for network id ", net, " as a part of network implement")
	b = g.line(b, "DEBUG", "o.a.c.e.o.NetworkOrchestrator", w, "Guest IP address ", ip, " changed from [free] to [vm:", vm, "]")
	b = g.line(b, "DEBUG", "c.c.a.t.Request", w, "Seq ", host, "-", strconv.FormatInt(c, 10), `: Sending  { Cmd , MgmtId: 9, via: `, host, `(kvm`, host, `), Ver: v1, Flags: 100011, [{"com.cloud.agent.api.StartCommand":{"vmName":"`, name, `","wait":"0"}}] }`)
	b = g.line(b, "DEBUG", "c.c.a.t.Request", "AgentManager-Handler-3", "Seq ", host, "-", strconv.FormatInt(c, 10), `: Received:  { Ans: , MgmtId: 9, via: `, host, `(kvm`, host, `), Ver: v1, Flags: 10, { StartAnswer } }`)
	b = tr("Starting", "Running", "OperationSucceeded")
	b = g.line(b, "DEBUG", "c.c.c.ConfigurationManagerImpl", "qtp-7", "Looking up config key that is not modelled by logcheck: ", vm)
	b = g.line(b, "DEBUG", "c.c.v.VirtualMachinePowerStateSyncImpl", "AgentManager-Handler-2", "Process VM state report. ", hj, ", number of records in report: 1. VMs: [", vm, ":PowerOn]]")
	b = g.line(b, "DEBUG", "c.c.v.VirtualMachinePowerStateSyncImpl", "AgentManager-Handler-2", "VM state report is updated. ", hj, ", ", vmj, ", power state: PowerOn.")
	b = g.line(b, "DEBUG", "o.a.c.f.j.i.AsyncJobManagerImpl", w, "Complete async job-", strconv.FormatInt(c, 10), ", jobStatus: SUCCEEDED, resultCode: 0, result: null")
	b = tr("Running", "Stopping", "StopRequested")
	b = g.line(b, "DEBUG", "c.c.a.t.Request", w, "Seq ", host, "-", strconv.FormatInt(c+1, 10), `: Sending  { Cmd , MgmtId: 9, via: `, host, `(kvm`, host, `), Ver: v1, Flags: 100011, [{"com.cloud.agent.api.StopCommand":{"vmName":"`, name, `","wait":"0"}}] }`)
	b = g.line(b, "DEBUG", "c.c.v.VirtualMachinePowerStateSyncImpl", "AgentManager-Handler-2", "VM state report is updated. ", hj, ", ", vmj, ", power state: PowerOff.")
	b = g.line(b, "DEBUG", "c.c.v.VirtualMachineManagerImpl", w, "The nic 3 on ", name, " was released according to GuestNetworkGuru, now updating record.")
	b = g.line(b, "DEBUG", "o.a.c.e.o.NetworkOrchestrator", w, "Guest IP address ", ip, " changed from [vm:", vm, "] to [free]")
	b = tr("Stopping", "Stopped", "OperationSucceeded")
	b = g.line(b, "DEBUG", "o.a.c.e.o.NetworkOrchestrator", "Network-Scavenger-1", "Lock is acquired for network id ", net, " as a part of network shutdown")
	b = g.line(b, "DEBUG", "c.c.n.d.NetworkDaoImpl", "Network-Scavenger-1", nj, " state transited from [Implemented] to [Shutdown] with event [DestroyNetwork]")
	b = g.line(b, "DEBUG", "c.c.n.d.NetworkDaoImpl", "Network-Scavenger-1", nj, " state transited from [Shutdown] to [Allocated] with event [OperationSucceeded]")
	b = g.line(b, "DEBUG", "o.a.c.e.o.NetworkOrchestrator", "Network-Scavenger-1", "Lock is released for network id ", net, " as a part of network shutdown")
	if c%50 == 0 {
		b = g.line(b, "WARN", "c.c.a.m.AgentManagerImpl", "AgentManager-Handler-4", "Exception while processing a ping from ", hj)
		b = append(b, "java.lang.IllegalStateException: generated\n\tat com.cloud.agent.manager.AgentManagerImpl.handleCommands(AgentManagerImpl.java:1400)\n\tat com.cloud.agent.manager.AgentManagerImpl$AgentHandler.doTask(AgentManagerImpl.java:1600)\n"...)
	}
	return b
}

// BenchmarkLogcheck parses and checks a generated log of LOGCHECK_BENCH_MB megabytes (default 64;
// the figure is 1024) per operation: MB/s, and the heap's peak to show it stays flat.
func BenchmarkLogcheck(b *testing.B) {
	mb := int64(64)
	if s := os.Getenv("LOGCHECK_BENCH_MB"); s != "" {
		mb, _ = strconv.ParseInt(s, 10, 64)
	}
	size := mb << 20
	b.SetBytes(size)
	b.ReportAllocs()
	var peak uint64
	cpu0 := cpuTime()
	for range b.N {
		g := newGenLog(size)
		rep, err := RunReader("generated.log", g, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.Findings) > 0 || rep.Stats.Malformed > 0 {
			b.Fatalf("generated log: %d findings (first %+v), %d malformed", len(rep.Findings), rep.Findings, rep.Stats.Malformed)
		}
		peak = max(peak, g.peakHeap)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-live-heap-MB")
	// the machine is shared: MB per CPU-second (the generator's share included) is the figure that
	// does not depend on what else runs
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(size*int64(b.N))/(1<<20)/cpu.Seconds(), "MB/cpu-s")
	}
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
