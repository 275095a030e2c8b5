package live

import (
	"runtime"
	"testing"

	"github.com/csconform/csconform/impl"
)

// chanPipe is one end of an in-memory connection.
type chanPipe struct {
	in, out chan impl.Message
}

func (p *chanPipe) Send(m impl.Message) error      { p.out <- m; return nil }
func (p *chanPipe) Recv() (impl.Message, error)    { return <-p.in, nil }
func (p *chanPipe) Close()                         {}
func (p *chanPipe) Dial(string) (impl.Pipe, error) { return p, nil }

// TestStaleHoldOrder: with Hold (an agent on libvirt), a StartCommand that arrives while a stale
// report is armed waits until the report is collected, and the report is sent only after that
// start's answer; without hold the start passes at once.
func TestStaleHoldOrder(t *testing.T) {
	for _, hold := range []bool{true, false} {
		wire := &chanPipe{in: make(chan impl.Message, 4), out: make(chan impl.Message, 4)}
		d := &StaleReport{Hold: hold}
		p := &stalePipe{Pipe: wire, s: d}
		d.Arm(1) // 1 ns late: the order is what counts
		wire.in <- impl.Message{Kind: impl.MsgStart, Seq: 7}
		got := make(chan impl.Message, 1)
		go func() { m, _ := p.Recv(); got <- m }()
		if !hold {
			if m := <-got; m.Seq != 7 {
				t.Fatalf("without hold: got %+v", m)
			}
			continue
		}
		for held := false; !held; runtime.Gosched() {
			select {
			case m := <-got:
				t.Fatalf("StartCommand %+v passed while the stale report was armed and not collected", m)
			default:
			}
			d.mu.Lock()
			held = d.held != nil
			d.mu.Unlock()
		}
		// The agent collects the report (it is sent through the pipe): the start is let through...
		if err := p.Send(impl.Message{Kind: impl.MsgPing, OutOfBand: true, Seq: 1}); err != nil {
			t.Fatal(err)
		}
		if m := <-got; m.Seq != 7 {
			t.Fatalf("held start: got %+v", m)
		}
		// ...and the report goes out only after the start's answer.
		if err := p.Send(impl.Message{Kind: impl.MsgAnswer, Seq: 7}); err != nil {
			t.Fatal(err)
		}
		if m := <-wire.out; m.Kind != impl.MsgAnswer {
			t.Fatalf("first on the wire: %+v, want the StartCommand's answer", m)
		}
		if m := <-wire.out; m.Kind != impl.MsgPing || !m.OutOfBand {
			t.Fatalf("then: %+v, want the stale report", m)
		}
	}
}
