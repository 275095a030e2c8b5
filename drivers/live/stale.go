package live

import (
	"fmt"
	"sync"
	"time"

	"github.com/csconform/csconform/impl"
)

// StaleHold is how long at most a StartCommand reaching an agent waits on the wire while a stale
// report is armed on its host and not yet collected (StaleReport.Hold).
//
// The simulator's stale-report fault (DelayNextOutOfBand) delays the report's delivery; that the
// report is collected before a domain being started exists comes from the simulator's timing: a
// crash's lifecycle event reaches the agent at once, and a define+create takes 0.3–1 s. On libvirt a
// kill -9's STOPPED/FAILED event reaches the agent ~0.2 s after the kill (libvirt reaps QEMU first),
// while a create is listed as a running domain within ~50 ms of the StartCommand's arrival, so seed
// 001's report ("collected at that moment, web1's domain does not exist yet") would list web1. So
// while a stale report is armed, a StartCommand stays on the wire (held in the agent's socket, as a
// slow network would) until the agent has collected that report, StaleHold at most. The report
// itself is the agent's own, listed from libvirt.
//
// The report's delay then counts from the answer to the held StartCommand, not from its collection:
// in the simulator the define+create takes 0.3–1 s, so a report 1.5 s late reaches the server after
// the StartAnswer (seed 001: "processed 1.5 s later, after the StartAnswer"); a TCG create under the
// load of a whole tier took 0.4–1.5 s and more, and a report that overtakes the StartAnswer is
// postponed (the start's work job is pending) and shows nothing.
const StaleHold = 5 * time.Second

// StaleReport is one host's stale-report fault on the agent's side of the wire: after Arm(d) the
// agent's next out-of-band report reaches the server d late (sent after the delay; later messages
// overtake it, as with CloudStack's agent thread pool). With Hold (an agent on real domains) a
// StartCommand arriving while the report is armed and not yet collected is held (see StaleHold) and
// the delay counts from that start's answer. It outlives the agent's connections: Wrap each one.
type StaleReport struct {
	Hold bool
	// Log, if set, is told what the fault did to the wire (a held StartCommand, a late report).
	Log func(detail string)

	mu        sync.Mutex
	delay     time.Duration // of the next out-of-band report (0: none armed)
	collected chan struct{} // closed when the armed report is collected
	held      *heldStart    // the StartCommand held for it, until its answer is sent
}

type heldStart struct {
	seq      int64
	answered chan struct{}
}

// Arm makes the next out-of-band report d late.
func (s *StaleReport) Arm(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.delay == 0 {
		s.collected = make(chan struct{})
	}
	s.delay = d
}

// take disarms the report (the agent collected it: it is being sent) and returns its delay and the
// answer of the StartCommand held for it (nil: none).
func (s *StaleReport) take() (time.Duration, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.delay
	var answered chan struct{}
	if d > 0 {
		s.delay = 0
		close(s.collected)
		if s.held != nil {
			answered = s.held.answered
		}
	}
	return d, answered
}

// holdStart registers StartCommand seq as held if a report is armed, and returns the channel closed
// when that report is collected (nil: nothing armed). One step, so a report collected in between
// cannot leave a start registered for a report that is gone.
func (s *StaleReport) holdStart(seq int64) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.delay == 0 {
		return nil
	}
	s.held = &heldStart{seq: seq, answered: make(chan struct{})}
	return s.collected
}

func (s *StaleReport) answered(seq int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if hs := s.held; hs != nil && hs.seq == seq {
		s.held = nil
		close(hs.answered)
	}
}

func (s *StaleReport) log(format string, args ...any) {
	if s.Log != nil {
		s.Log(fmt.Sprintf(format, args...))
	}
}

// Wrap returns the agent's transport with the fault on its connections.
func (s *StaleReport) Wrap(t impl.Transport) impl.Transport { return staleTransport{t, s} }

type staleTransport struct {
	impl.Transport
	s *StaleReport
}

func (t staleTransport) Dial(hostID string) (impl.Pipe, error) {
	p, err := t.Transport.Dial(hostID)
	if err != nil {
		return nil, err
	}
	return &stalePipe{Pipe: p, s: t.s}, nil
}

type stalePipe struct {
	impl.Pipe
	s *StaleReport
}

func (p *stalePipe) Send(m impl.Message) error {
	if m.Kind == impl.MsgPing && m.OutOfBand {
		if d, answered := p.s.take(); d > 0 {
			go func() {
				if answered != nil {
					select {
					case <-answered:
					case <-time.After(time.Minute):
					}
				}
				t0 := time.Now()
				time.Sleep(d)
				after := "after its collection"
				if answered != nil {
					after = "after the answer to the StartCommand held for it"
				}
				p.s.log("stale out-of-band report (collected %s) sent %s %s", m.CollectedAt.Format("15:04:05.000"), time.Since(t0).Round(time.Millisecond), after)
				_ = p.Pipe.Send(m)
			}()
			return nil
		}
	}
	err := p.Pipe.Send(m)
	// The held start counts as answered once its answer is on the wire, not before: the late
	// report waiting on it must not overtake the answer.
	if m.Kind == impl.MsgAnswer && p.s.Hold {
		p.s.answered(m.Seq)
	}
	return err
}

// Recv holds a StartCommand while a report is armed and not yet collected (with Hold).
func (p *stalePipe) Recv() (impl.Message, error) {
	m, err := p.Pipe.Recv()
	if err != nil || m.Kind != impl.MsgStart || !p.s.Hold {
		return m, err
	}
	if ch := p.s.holdStart(m.Seq); ch != nil {
		t0 := time.Now()
		t := time.NewTimer(StaleHold)
		defer t.Stop()
		how := "collected"
		select {
		case <-ch:
		case <-t.C:
			how = "not collected"
		}
		name := ""
		if m.Domain != nil {
			name = m.Domain.Name
		}
		p.s.log("StartCommand for %s held on the wire %d ms while a stale report is armed (%s)", name, time.Since(t0).Milliseconds(), how)
	}
	return m, nil
}
