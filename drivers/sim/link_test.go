package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/csconform/csconform/impl"
)

// A server's process exit closes every one of its agents' connections (three here: closing one
// used to shift the list under the loop and skip the next), and only its own: the agents of a peer
// stay connected, and an agent whose preferred server is gone dials the next one in its order.
func TestListenOffClosesEveryConnectionOfItsServer(t *testing.T) {
	s := NewScheduler(1)
	defer s.Close()
	f := NewFabric(s)
	ms1, ms2 := f.Endpoint("ms1"), f.Endpoint("ms2")
	ms1.Listen(true)
	ms2.Listen(true)
	f.Prefer("h4", []string{"ms2", "ms1"})
	pipes := map[string]impl.Pipe{}
	for _, h := range []string{"h1", "h2", "h3", "h4"} {
		p, err := f.Dial(h)
		if err != nil {
			t.Fatal(err)
		}
		pipes[h] = p
	}
	ms1.Listen(false)
	for h, p := range pipes {
		errs := make(chan error, 1)
		s.Go("recv/"+h, func() { _, err := p.Recv(); errs <- err })
		s.RunFor(time.Second)
		var err error
		select {
		case err = <-errs:
		default:
		}
		closed := errors.Is(err, impl.ErrClosed)
		if want := h != "h4"; closed != want {
			t.Errorf("%s: closed=%v, want %v (err %v)", h, closed, want, err)
		}
	}
	f.Prefer("h1", []string{"ms1", "ms2"})
	if _, err := f.Dial("h1"); err != nil {
		t.Errorf("h1 with ms1 gone: %v, want a connection to ms2", err)
	}
	if _, err := f.Dial("h2"); err == nil {
		t.Error("h2 (no order: the default server only) connected with its server gone")
	}
}

// Messages on one connection arrive in the order they were sent, as on TCP, also when later ones
// draw a shorter latency and are clamped to the same arrival instant as earlier ones (the
// scheduler wakes same-instant callbacks in its tie order) and when a cut link releases what it
// held with new messages behind it. A StartCommand held on a cut link once arrived after the
// StopCommand sent after the heal.
func TestMessagesKeepTheirOrderOnAConnection(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		s := NewScheduler(seed)
		f := NewFabric(s)
		f.Listen(true)
		agent, err := f.Dial("h1")
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		s.Go("agent", func() {
			for {
				m, err := agent.Recv()
				if err != nil {
					return
				}
				got = append(got, m.Seq)
			}
		})
		s.Go("ms", func() {
			ms, _ := f.Accept()
			seq := int64(0)
			send := func(n int) {
				for range n {
					seq++
					_ = ms.Send(impl.Message{Seq: seq, Kind: impl.MsgStop})
				}
			}
			send(20)
			f.Cut("h1", true)
			send(5)
			s.Sleep(time.Second)
			f.Cut("h1", false)
			send(20)
		})
		s.RunFor(5 * time.Second)
		s.Close()
		if len(got) != 45 {
			t.Fatalf("seed %d: %d of 45 messages arrived", seed, len(got))
		}
		for i, q := range got {
			if q != int64(i+1) {
				t.Fatalf("seed %d: arrival order %v, want 1..45", seed, got)
			}
		}
	}
}
