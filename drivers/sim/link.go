package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/csconform/csconform/impl"
)

// Fabric is the in-memory network between agents and the management server. Messages keep their order
// on each connection (TCP), take a seeded latency, are held while a host's link is cut and flow again
// when it heals; a closed connection is seen by both ends.
type Fabric struct {
	s *Scheduler
	// def is the management server's endpoint (Listen, Accept); peers are the other servers' when
	// several share the database, and prefs each host's order of servers (its agent's host= list).
	def   *Endpoint
	peers map[string]*Endpoint
	prefs map[string][]string
	conns []*conn
	cut   map[string]bool
	// stale: the next out-of-band ping from a host is processed this much later (a report collected at
	// t and handled at t+d), without holding back the messages behind it.
	stale map[string]time.Duration
	// MinLatency and MaxLatency bound the one-way delay of a message.
	MinLatency, MaxLatency time.Duration
}

type conn struct {
	host   string
	ep     *Endpoint // the server end's endpoint
	closed bool
	ms     *end // the management server's end
	agent  *end
}

type end struct {
	f       *Fabric
	c       *conn
	peer    *end
	inbox   msgQueue
	held    []impl.Message // sent while the link was cut
	wire    msgQueue       // sent, not arrived yet, in sending order
	lastArr time.Time
	sig     impl.Signal
}

// NewFabric returns a fabric whose management server is not listening yet.
func NewFabric(s *Scheduler) *Fabric {
	f := &Fabric{s: s, cut: map[string]bool{}, stale: map[string]time.Duration{},
		MinLatency: time.Millisecond, MaxLatency: 20 * time.Millisecond}
	f.def = &Endpoint{f: f, name: "ms1"}
	return f
}

// Endpoint is one management server's listening address on the fabric.
type Endpoint struct {
	f         *Fabric
	name      string
	listening bool
	backlog   []*end
	acceptSig impl.Signal
}

// Endpoint returns the endpoint of the server named name ("" or "ms1": the default one, which
// Listen and Accept use), making it on first use.
func (f *Fabric) Endpoint(name string) *Endpoint {
	if name == "" || name == f.def.name {
		return f.def
	}
	if e, ok := f.peers[name]; ok {
		return e
	}
	if f.peers == nil {
		f.peers = map[string]*Endpoint{}
	}
	e := &Endpoint{f: f, name: name}
	f.peers[name] = e
	return e
}

// Prefer sets the order in which host's agent tries the servers (the host= list of its
// agent.properties, behind the balancer): the first listening one gets the connection.
func (f *Fabric) Prefer(host string, servers []string) {
	if f.prefs == nil {
		f.prefs = map[string][]string{}
	}
	f.prefs[host] = servers
}

// Listen starts (or stops) accepting agent connections on the default endpoint; stopping closes its
// connections, as a management server's process exit does.
func (f *Fabric) Listen(on bool) { f.def.Listen(on) }

// Listen starts (or stops) accepting agent connections; stopping closes every connection to this
// server, as its process exit does.
func (e *Endpoint) Listen(on bool) {
	f := e.f
	e.listening = on
	if !on {
		var kept []*conn
		// over a copy: close takes the connection out of f.conns
		for _, c := range slices.Clone(f.conns) {
			if c.ep == e {
				c.close()
			} else {
				kept = append(kept, c)
			}
		}
		f.conns = kept
		e.backlog = nil
		if e.acceptSig != nil {
			e.acceptSig.Fire()
		}
	}
}

// Dial is the agent's side (the fabric chooses the server).
func (e *Endpoint) Dial(host string) (impl.Pipe, error) { return e.f.Dial(host) }

// Cut holds (true) or releases (false) every message on host's link, in both directions.
func (f *Fabric) Cut(host string, on bool) {
	f.cut[host] = on
	if !on {
		for _, c := range slices.Clone(f.conns) {
			if c.host == host && !c.closed {
				c.ms.flush()
				c.agent.flush()
			}
		}
	}
}

// DelayNextOutOfBand makes the next out-of-band ping from host reach the management server d later
// than it would.
func (f *Fabric) DelayNextOutOfBand(host string, d time.Duration) { f.stale[host] = d }

// CloseHost closes host's connections (an agent process dying closes its socket).
func (f *Fabric) CloseHost(host string) {
	for _, c := range slices.Clone(f.conns) {
		if c.host == host {
			c.close()
		}
	}
}

// Dial is the agent's side.
func (f *Fabric) Dial(host string) (impl.Pipe, error) {
	ep := f.def
	if order, ok := f.prefs[host]; ok {
		ep = nil
		for _, name := range order {
			if e := f.Endpoint(name); e.listening {
				ep = e
				break
			}
		}
	}
	if ep == nil || !ep.listening {
		return nil, fmt.Errorf("dial management server: connection refused")
	}
	if f.cut[host] {
		return nil, fmt.Errorf("dial management server: i/o timeout")
	}
	c := &conn{host: host, ep: ep}
	c.ms = &end{f: f, c: c}
	c.agent = &end{f: f, c: c}
	c.ms.peer, c.agent.peer = c.agent, c.ms
	f.conns = append(f.conns, c)
	ep.backlog = append(ep.backlog, c.ms)
	if ep.acceptSig != nil {
		ep.acceptSig.Fire()
	}
	return c.agent, nil
}

// Accept is the default management server's side.
func (f *Fabric) Accept() (impl.Pipe, error) { return f.def.Accept() }

// Accept is the management server's side.
func (e *Endpoint) Accept() (impl.Pipe, error) {
	for {
		if !e.listening {
			return nil, impl.ErrClosed
		}
		if len(e.backlog) > 0 {
			b := e.backlog[0]
			e.backlog = e.backlog[1:]
			return b, nil
		}
		e.acceptSig = e.f.s.NewSignal()
		e.acceptSig.Wait(0)
	}
}

func (c *conn) close() {
	if c.closed {
		return
	}
	c.closed = true
	for _, e := range []*end{c.ms, c.agent} {
		e.held = nil
		if e.sig != nil {
			e.sig.Fire()
		}
	}
	fs := c.ms.f
	for i, x := range fs.conns {
		if x == c {
			fs.conns = append(fs.conns[:i], fs.conns[i+1:]...)
			break
		}
	}
}

func (e *end) latency() time.Duration {
	f := e.f
	span := f.MaxLatency - f.MinLatency
	if span <= 0 {
		return f.MinLatency
	}
	return f.MinLatency + time.Duration(f.s.rng.Int64N(int64(span)))
}

func (e *end) Send(m impl.Message) error {
	e.f.s.Point(impl.PointSend)
	if e.c.closed {
		return impl.ErrClosed
	}
	if e.f.cut[e.c.host] {
		e.held = append(e.held, m)
		return nil
	}
	e.transmit(m)
	return nil
}

func (e *end) transmit(m impl.Message) {
	f, peer := e.f, e.peer
	at := f.s.now.Add(e.latency())
	if m.Kind == impl.MsgPing && m.OutOfBand && e == e.c.agent {
		if d, ok := f.stale[e.c.host]; ok {
			delete(f.stale, e.c.host)
			e.deliverLate(at.Add(d), m)
			return
		}
	}
	if at.Before(e.lastArr) {
		at = e.lastArr // in order, as on one TCP connection
	}
	e.lastArr = at
	// Messages clamped to one arrival time would be woken in the scheduler's tie order: each wake-up
	// delivers the oldest message on the wire instead, so the order is the sending order.
	e.wire.push(m)
	f.s.After(at.Sub(f.s.now), func() { peer.arrive(e.wire.pop()) })
}

// deliverLate hands m to the peer at the instant at, outside the wire's order (a stale report). Its own
// function so that only these messages, not every one transmit sends, are captured on the heap.
func (e *end) deliverLate(at time.Time, m impl.Message) {
	peer := e.peer
	e.f.s.After(at.Sub(e.f.s.now), func() { peer.arrive(m) })
}

// msgQueue is a FIFO of messages that keeps its array: a slice resliced from the front loses capacity
// at each pop and reallocates (a day of 200 hosts allocated 230 MB so), and one copied down at each pop
// pays for its length.
type msgQueue struct {
	buf  []impl.Message
	head int
}

func (q *msgQueue) len() int { return len(q.buf) - q.head }

func (q *msgQueue) push(m impl.Message) {
	if q.head > 0 && len(q.buf) == cap(q.buf) { // room at the front: move down rather than grow
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf, q.head = q.buf[:n], 0
	}
	q.buf = append(q.buf, m)
}

// pop takes the oldest message; the queue must not be empty.
func (q *msgQueue) pop() impl.Message {
	m := q.buf[q.head]
	q.buf[q.head] = impl.Message{} // its strings and slices are the receiver's now
	q.head++
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
	return m
}

func (e *end) flush() {
	held := e.held
	e.held = nil
	for _, m := range held {
		e.transmit(m)
	}
}

func (e *end) arrive(m impl.Message) {
	if e.c.closed {
		return
	}
	e.inbox.push(m)
	if e.sig != nil {
		e.sig.Fire()
	}
}

func (e *end) Recv() (impl.Message, error) {
	e.f.s.Point(impl.PointRecv)
	for {
		if e.inbox.len() > 0 {
			return e.inbox.pop(), nil
		}
		if e.c.closed {
			return impl.Message{}, impl.ErrClosed
		}
		e.sig = e.f.s.NewSignal()
		e.sig.Wait(0)
	}
}

func (e *end) Close() { e.c.close() }

var _ impl.Transport = (*Fabric)(nil)
