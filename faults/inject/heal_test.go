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
		{strings.Repeat("x", maxLogLine+10), "token too long"},
	} {
		_, err := ReadUnhealed(strings.NewReader(c.in))
		assert.ErrorContains(t, err, c.want)
	}
	_, err := ReadUnhealedFile("/nonexistent/inject.log")
	assert.ErrorIs(t, err, os.ErrNotExist)
}
