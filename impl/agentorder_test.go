package impl_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
)

// C6: the KVM agent runs each request on its AgentRequest-Handler pool (Agent.processRequest, a
// ThreadPoolExecutor of agent.workers threads), and neither LibvirtStartCommandWrapper nor
// LibvirtStopCommandWrapper takes a per-VM lock: the start prepares disks and VIFs before
// startVM, and a StopCommand that arrives meanwhile looks the domain up (checkBeforeCleanup),
// finds none, destroys nothing and answers success. The server then releases the VM's NICs and
// volumes, and the start boots its domain anyway. The fix orders the two by arrival: the stop waits
// until the start's domain exists (or the start failed), and checkBeforeCleanup then refuses.
// Here the test is the management server: it sends a StartCommand and, right behind it on the same
// connection, a StopCommand with checkBeforeCleanup, as power sync does for a VM it believes gone.
func TestAgentOrdersAStopBehindTheStartOfItsVM(t *testing.T) {
	for _, tc := range []struct {
		name       string
		c6         bool
		stopResult bool // the StopCommand's answer
	}{
		{"cloudstack-4.22 (C6 on): the stop finds no domain and succeeds", true, true},
		{"fixed: the stop waits for the domain and refuses", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sim.NewScheduler(3)
			defer s.Close()
			f := sim.NewFabric(s)
			f.Listen(true)
			hv := sim.NewHost(s, "h1")
			a := impl.NewAgent("h1", s, f, hv, nil)
			a.Defects = impl.Switches{impl.C6: tc.c6}
			answers := map[int64]impl.Message{}
			s.Go("ms", func() {
				p, err := f.Accept()
				if err != nil {
					return
				}
				if _, err := p.Recv(); err != nil { // StartupCommand
					return
				}
				_ = p.Send(impl.Message{Kind: impl.MsgAnswer, PingInterval: time.Minute})
				_ = p.Send(impl.Message{Seq: 1, Kind: impl.MsgStart, Domain: &impl.DomainSpec{Name: "i-2-3-VM", Type: "User", MemoryMiB: 128}})
				_ = p.Send(impl.Message{Seq: 2, Kind: impl.MsgStop, VMName: "i-2-3-VM", CheckFirst: true})
				for len(answers) < 2 {
					m, err := p.Recv()
					if err != nil {
						return
					}
					if m.Kind == impl.MsgAnswer {
						answers[m.Seq] = m
					}
				}
			})
			a.Start()
			require.NoError(t, s.RunFor(30*time.Second))
			require.Len(t, answers, 2)
			require.True(t, answers[1].Result, "start: %s", answers[1].Details)
			require.Equal(t, tc.stopResult, answers[2].Result, "stop: %s", answers[2].Details)
			// either way the domain runs: under C6 the server was told it is stopped
			require.True(t, slices.Contains(hv.Running(), "i-2-3-VM"))
		})
	}
}
