package logcheck

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/csconform/csconform/model/history"
)

// Style is a generation of the log layout and wording.
type Style int

const (
	// Style422 is 4.22: (logid:…), bracketed contexts, JSON object renderings, "state transited from [A]".
	Style422 Style = iota
	// Style45 is 4.5–4.11: no logid, plain contexts, VM[User|i-2-6-VM], "state transitted from :A".
	Style45
)

// WriteLog renders a reference history (model/history, as impl records it) as the
// management-server.log a CloudStack of that style would have written: the server's log lines,
// and a line for every record change CloudStack logs at DEBUG (state transitions, network locks,
// power-state updates, guest IPs, jobs). Agent lines, client calls and the harness's observations,
// faults and verdicts are not in a management server's log and are left out.
func WriteLog(w io.Writer, events []history.Event, style Style) error {
	bw := bufio.NewWriter(w)
	names := map[string]string{} // vm:N -> instance name
	var cidrs []netCIDR          // the guest networks' address ranges, for the IP lines
	for _, e := range events {
		if e.Kind == history.State && strings.HasPrefix(e.Object, "vm:") {
			if n, ok := strings.CutPrefix(e.Detail, "created "); ok {
				names[e.Object] = n
			}
		}
		if e.Kind == history.State && strings.HasPrefix(e.Object, "network:") && e.From == "" {
			// "created net1 10.1.1.0/24 persistent=false"
			if f := strings.Fields(e.Detail); len(f) > 2 {
				if p, err := netip.ParsePrefix(f[2]); err == nil {
					cidrs = append(cidrs, netCIDR{e.Object, p})
				}
			}
		}
		if e.Kind == history.IP {
			if a, err := netip.ParseAddr(strings.TrimPrefix(e.Object, "ip:")); err == nil {
				for _, c := range cidrs {
					if c.p.Contains(a) {
						e.Detail = c.net
					}
				}
			}
		}
		logger, msg, frames := render(e, style, names)
		if msg == "" {
			continue
		}
		if style == Style45 && e.Kind == history.State && strings.HasPrefix(e.Object, "vm:") {
			// 4.5's transition line names no VM; a reader learns it from the thread's previous
			// line, so the reference names the VM on the line before (its own wording)
			pre := e
			pre.Kind, pre.Detail, pre.Level = history.Log, "Updating the state of "+vmRender(e.Object, names, "", style)+" to "+e.To, "DEBUG"
			if err := writeLine(bw, pre, style, "c.c.v.VirtualMachineManagerImpl", pre.Detail, nil); err != nil {
				return err
			}
		}
		if err := writeLine(bw, e, style, logger, msg, frames); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func writeLine(bw *bufio.Writer, e history.Event, style Style, logger, msg string, frames []string) error {
	{
		level := e.Level
		if level == "" {
			level = "DEBUG"
		}
		thread := e.Actor
		if thread == "" {
			thread = "main"
		}
		ctx := fmt.Sprintf("ctx-%08x", e.Seq)
		ts := e.Time.Format("2006-01-02 15:04:05,000")
		if style == Style45 {
			fmt.Fprintf(bw, "%s %-5s [%s] (%s:%s) %s\n", ts, level, logger, thread, ctx, msg)
		} else {
			fmt.Fprintf(bw, "%s %-5s [%s] (%s:[%s]) (logid:%08x) %s\n", ts, level, logger, thread, ctx, e.Seq, msg)
		}
		for _, f := range frames {
			fmt.Fprintf(bw, "\tat %s\n", f)
		}
	}
	return nil
}

type netCIDR struct {
	net string
	p   netip.Prefix
}

func vmName(obj string, names map[string]string) string {
	if n := names[obj]; n != "" {
		return n
	}
	return "i-2-" + strings.TrimPrefix(obj, "vm:") + "-VM"
}

func vmRender(obj string, names map[string]string, state string, style Style) string {
	id := strings.TrimPrefix(obj, "vm:")
	n := vmName(obj, names)
	typ := "User"
	if strings.HasPrefix(n, "r-") {
		typ = "DomainRouter"
	}
	if style == Style45 {
		return fmt.Sprintf("VM[%s|%s]", typ, n)
	}
	st := ""
	if state != "" {
		st = fmt.Sprintf(`,"state":"%s"`, state)
	}
	return fmt.Sprintf(`VM instance {"id":%s,"instanceName":"%s","type":"%s","uuid":"00000000-0000-4000-8000-%012s"%s}`, id, n, typ, id, st)
}

func hostRender(h string, style Style) string {
	if h == "" {
		return "null"
	}
	if style == Style45 {
		return h
	}
	return fmt.Sprintf(`Host {"id":"%s","name":"%s","type":"Routing"}`, h, h)
}

func netRender(obj string, style Style) string {
	id := strings.TrimPrefix(obj, "network:")
	if style == Style45 {
		return fmt.Sprintf("Ntwk[%s|Guest|1]", id)
	}
	return fmt.Sprintf(`Network {"id": %s, "name": "net%s", "uuid": "00000000-0000-4000-9000-%012s", "networkofferingid": 1}`, id, id, id)
}

// render returns the logger and message of e ("" to leave it out) and stack frames for errors.
func render(e history.Event, style Style, names map[string]string) (logger, msg string, frames []string) {
	obj := e.Object
	switch e.Kind {
	case history.Log:
		if strings.HasPrefix(e.Actor, "agent/") {
			return "", "", nil // agent.log, not management-server.log
		}
		logger = "c.c.v.VirtualMachineManagerImpl"
		switch {
		case strings.HasPrefix(obj, "network:"):
			logger = "o.a.c.e.o.NetworkOrchestrator"
		case strings.HasPrefix(obj, "host:"):
			logger = "c.c.a.m.AgentManagerImpl"
		}
		if strings.Contains(e.Detail, "state report") || strings.Contains(e.Detail, "missing VM") || strings.Contains(e.Detail, "graceful period") {
			logger = "c.c.v.VirtualMachinePowerStateSyncImpl"
		}
		if e.Level == "ERROR" {
			frames = []string{"com.cloud.utils.exception.CloudRuntimeException.<init>(CloudRuntimeException.java:40)",
				"org.apache.cloudstack.engine.orchestration.NetworkOrchestrator.implementNetwork(NetworkOrchestrator.java:1540)"}
		}
		return logger, reword(e, style, names), frames
	case history.State:
		kind, _, _ := strings.Cut(obj, ":")
		switch kind {
		case "vm":
			if e.From == "" {
				return "", "", nil
			}
			f := strings.Fields(e.Detail) // "i-2-2-VM StartRequested host=h1"
			event, host := "", ""
			if len(f) > 1 {
				event = f[1]
			}
			if e.To == "Expunged" && event == "" || event == "removed" {
				event = "ExpungeOperation"
			}
			if len(f) > 2 {
				host = strings.TrimPrefix(f[2], "host=")
			}
			if style == Style45 {
				// the old line names no VM: the thread's previous line does (see WriteLog)
				return "c.c.v.d.VMInstanceDaoImpl", fmt.Sprintf("VM state transitted from :%s to %s with event: %svm's original host id: %s new host id: %s host id before state transition: %s",
					e.From, e.To, event, orNull(host), orNull(host), orNull(host)), nil
			}
			return "c.c.v.d.VMInstanceDaoImpl", fmt.Sprintf("%s state transited from [%s] to [%s] with event [%s]. VM's original host: %s, new host: %s, host before state transition: %s",
				vmRender(obj, names, e.To, style), e.From, e.To, event, hostRender(host, style), hostRender(host, style), hostRender(host, style)), nil
		case "network":
			if e.From == "" {
				return "", "", nil
			}
			how := ""
			if e.Direct {
				how = " (written directly, around the state machine)"
			}
			return "c.c.n.d.NetworkDaoImpl", fmt.Sprintf("%s state transited from [%s] to [%s] with event [%s]%s", netRender(obj, style), e.From, e.To, lastWord(e.Detail), how), nil
		case "host":
			return "c.c.h.d.HostDaoImpl", fmt.Sprintf("%s state transited from [%s] to [%s] with event [%s]", hostRender(strings.TrimPrefix(obj, "host:"), Style422), or(e.From, "Creating"), e.To, e.Detail), nil
		case "volume":
			if e.From == "" {
				return "", "", nil
			}
			return "c.c.s.d.VolumeDaoImpl", fmt.Sprintf(`Volume {"id":%s,"path":"%s"} state transited from [%s] to [%s] with event [%s]`, strings.TrimPrefix(obj, "volume:"), e.Detail, e.From, e.To, "Update"), nil
		case "job":
			id := strings.TrimPrefix(obj, "job:")
			if e.From == "" {
				cmd, inst, _ := strings.Cut(e.Detail, " ")
				return "o.a.c.f.j.i.AsyncJobManagerImpl", fmt.Sprintf(`Executing AsyncJob {"cmd":"%s","id":%s,"instance":"%s"}`, cmd, id, inst), nil
			}
			return "o.a.c.f.j.i.AsyncJobManagerImpl", fmt.Sprintf("Complete async job-%s, jobStatus: %s, resultCode: 0, result: null", id, e.To), nil
		}
	case history.Lock:
		id, ok := strings.CutPrefix(obj, "networks")
		if !ok {
			return "", "", nil
		}
		verb := "acquired"
		if e.To != "held" {
			verb = "released"
		}
		return "o.a.c.e.o.NetworkOrchestrator", fmt.Sprintf("Lock is %s for network id %s (lock table)", verb, id), nil
	case history.IP:
		of := ""
		if strings.HasPrefix(e.Detail, "network:") {
			of = " of " + netRender(e.Detail, style)
		}
		return "o.a.c.e.o.NetworkOrchestrator", fmt.Sprintf("Guest IP address %s%s changed from [%s] to [%s]", strings.TrimPrefix(obj, "ip:"), of, e.From, e.To), nil
	case history.Power:
		n, host, _ := strings.Cut(e.Detail, " on ")
		if n != "" {
			names[obj] = n
		}
		if style == Style45 {
			return "c.c.v.VirtualMachinePowerStateSyncImpl", fmt.Sprintf("VM state report is updated. host: %s, vm id: %s, power state: %s", host, strings.TrimPrefix(obj, "vm:"), e.To), nil
		}
		return "c.c.v.VirtualMachinePowerStateSyncImpl", fmt.Sprintf("VM state report is updated. %s, %s, power state: %s.", hostRender(host, style), vmRender(obj, names, "", style), e.To), nil
	}
	return "", "", nil
}

func orNull(s string) string { return or(s, "null") }

func or(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func lastWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

var (
	reReport  = regexp.MustCompile(`^Process VM state report\. host: (\S+), number of records in report: (\d+), force: \w+$`)
	reMissing = regexp.MustCompile(`^Detected missing VM\. host: (\S+), vm id: (\d+)\((\S+)\), power state: (\w+), last state update: (\d\d:\d\d:\d\d\.\d+)$`)
	reGrace   = regexp.MustCompile(`^vm id: (\d+) - time since last state update\((\d+) ms\) (has passed graceful period|has not passed graceful period yet)$`)
	reNoJobs  = regexp.MustCompile(`^(VM \S+ is at \w+ and we received a )PowerReportMissing( report while there is no pending jobs on it)$`)
	reInvest  = regexp.MustCompile(`^Investigating why host (\S+) has disconnected with event (\w+)$`)
)

// reword gives the reference's power-sync and host lines the wording of the style's CloudStack
// (log-formats.md, "Power-state sync wording by era"); the reference's history keeps its own words,
// so no run's history changes. Other lines are the reference's as they are.
func reword(e history.Event, style Style, names map[string]string) string {
	d := e.Detail
	if m := reReport.FindStringSubmatch(d); m != nil {
		if style == Style45 {
			return fmt.Sprintf("Process VM state report. host: %s, number of records in report: %s", m[1], m[2])
		}
		return fmt.Sprintf("Process VM state report. %s, number of records in report: %s.", hostRender(m[1], style), m[2])
	}
	if m := reMissing.FindStringSubmatch(d); m != nil {
		last := e.Time
		if t, err := time.Parse("15:04:05.000", m[5]); err == nil {
			y, mo, dd := e.Time.Date()
			last = time.Date(y, mo, dd, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
			if last.After(e.Time) {
				last = last.AddDate(0, 0, -1)
			}
		}
		if style == Style45 {
			return fmt.Sprintf("Detected missing VM. host: %s, vm id: %s, power state: %s, last state update: %d", m[1], m[2], m[4], last.UnixMilli())
		}
		return fmt.Sprintf("Detected missing VM. %s, %s, power state: %s, last state update: %s", hostRender(m[1], style),
			vmRender("vm:"+m[2], names, "", style), m[4], last.Format("2006-01-02T15:04:05-0700"))
	}
	if m := reGrace.FindStringSubmatch(d); m != nil {
		if style == Style45 {
			return fmt.Sprintf("vm id: %s - time since last state update(%sms) %s", m[1], m[2], m[3])
		}
		end := m[3]
		if end == "has passed graceful period" {
			end += "."
		}
		return fmt.Sprintf("%s - time since last state update(%s ms) %s", vmRender("vm:"+m[1], names, "", style), m[2], end)
	}
	if m := reNoJobs.FindStringSubmatch(d); m != nil && style == Style45 {
		return m[1] + "power-off" + m[2]
	}
	if m := reInvest.FindStringSubmatch(d); m != nil && style == Style422 {
		return fmt.Sprintf("Investigating why host %s has disconnected with event %s", hostRender(m[1], style), m[2])
	}
	return d
}
