package live

import (
	"bufio"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/csconform/csconform/impl"
)

// The agent link on the wire: one impl.Message per line, as JSON, over one TCP connection per agent
// (CloudStack's agents hold one NIO connection to port 8250). Nothing below the application notices a
// dead peer: there are no read deadlines, and TCP keepalives are answered by a paused process's
// kernel. Only the management server's ping timeout, or a command's wait, notices — as in CloudStack.

// AcceptRetryMin is the first wait after a failed accept (doubled at each failure in a row, to 1 s).
const AcceptRetryMin = 5 * time.Millisecond

// MaxFrame bounds one message on the wire.
const MaxFrame = 4 << 20

// WriteTimeout bounds one Send: a peer that stops reading (its buffers full) fails the send instead
// of blocking the sending thread for ever. The connection is closed after such a failure, since a
// partly written frame cannot be continued.
var WriteTimeout = 30 * time.Second

// Listener is the management server's side of the transport.
type Listener struct {
	// Key, when set, is the agent key (set before the server starts): a connection's first message
	// must be a StartupCommand carrying it, and so must every StartupCommand after it. A connection
	// that breaks the rule is closed before the server sees anything of it (impl.ErrClosed on Recv),
	// and Refused, when set, is told: the host the message named, the peer's address, and why.
	Key     string
	Refused func(host, from, why string)
	// AcceptFailed, when set, is told of an accept that failed and will be tried again after retry.
	AcceptFailed func(err error, retry time.Duration)

	ln     net.Listener
	mu     sync.Mutex
	pipes  map[*Pipe]struct{}
	closed bool
}

// Listen listens for agents on addr ("127.0.0.1:0" picks a port).
func Listen(addr string) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Listener{ln: ln, pipes: map[*Pipe]struct{}{}}, nil
}

// Addr is the address agents dial.
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Accept waits for the next agent connection; impl.ErrClosed once the listener is closed. Any other
// failure to accept (EMFILE after a burst of connections, ECONNABORTED) leaves the listener as it is:
// Accept waits, 5 ms doubling to 1 s, and accepts again, as net/http's Serve does. It used to end the
// server's accept loop, and no agent was ever accepted again until a restart (issue 49).
func (l *Listener) Accept() (impl.Pipe, error) {
	var delay time.Duration
	var c net.Conn
	for {
		var err error
		c, err = l.ln.Accept()
		if err == nil {
			break
		}
		l.mu.Lock()
		closed := l.closed
		l.mu.Unlock()
		if closed || errors.Is(err, net.ErrClosed) {
			return nil, fmt.Errorf("%w: %v", impl.ErrClosed, err)
		}
		delay = min(max(2*delay, AcceptRetryMin), time.Second)
		if l.AcceptFailed != nil {
			l.AcceptFailed(err, delay)
		}
		time.Sleep(delay)
	}
	p := newPipe(c)
	p.want, p.refused = l.Key, l.Refused
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		p.Close()
		return nil, impl.ErrClosed
	}
	l.pipes[p] = struct{}{}
	p.onClose = func() {
		l.mu.Lock()
		delete(l.pipes, p)
		l.mu.Unlock()
	}
	return p, nil
}

// Dial is not the management server's to do.
func (l *Listener) Dial(string) (impl.Pipe, error) {
	return nil, errors.New("the management server's transport does not dial agents")
}

// Close stops listening and closes every agent connection, as the server process's exit does.
func (l *Listener) Close() {
	l.mu.Lock()
	l.closed = true
	pipes := make([]*Pipe, 0, len(l.pipes))
	for p := range l.pipes {
		pipes = append(pipes, p)
	}
	l.mu.Unlock()
	l.ln.Close()
	for _, p := range pipes {
		p.Close()
	}
}

// Dialer is an agent's side of the transport: it connects to the management server at Addr.
type Dialer struct {
	Addr    string
	Timeout time.Duration // connect timeout (default 5 s)
	Key     string        // the agent key its StartupCommands carry (Listener.Key)
}

// Dial connects to the management server.
func (d *Dialer) Dial(hostID string) (impl.Pipe, error) {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	c, err := net.DialTimeout("tcp", d.Addr, timeout)
	if err != nil {
		return nil, err
	}
	p := newPipe(c)
	p.key = d.Key
	return p, nil
}

// Accept is not an agent's to do.
func (d *Dialer) Accept() (impl.Pipe, error) {
	return nil, errors.New("an agent's transport does not accept connections")
}

// Pipe is one agent connection: newline-delimited JSON of impl.Message over a net.Conn. Sends may come
// from many threads; receives from one.
type Pipe struct {
	c       net.Conn
	wmu     sync.Mutex
	in      *bufio.Scanner
	once    sync.Once
	onClose func()

	key     string // an agent's: the key its StartupCommands carry
	want    string // the server's: the key a StartupCommand must carry ("": none)
	authed  bool   // the server's: a StartupCommand with the key came
	refused func(host, from, why string)
}

// frame is a message on the wire: a StartupCommand also carries the agent key, which the
// transport adds and checks, so the management server's code never sees it.
type frame struct {
	impl.Message
	Key string `json:"agentKey,omitempty"`
}

func newPipe(c net.Conn) *Pipe {
	in := bufio.NewScanner(c)
	in.Buffer(make([]byte, 64<<10), MaxFrame)
	return &Pipe{c: c, in: in}
}

// Send writes one message.
func (p *Pipe) Send(m impl.Message) error {
	f := frame{Message: m}
	if m.Kind == impl.MsgStartup {
		f.Key = p.key
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	p.wmu.Lock()
	p.c.SetWriteDeadline(time.Now().Add(WriteTimeout))
	_, err = p.c.Write(b)
	p.wmu.Unlock()
	if err != nil {
		p.Close()
		return fmt.Errorf("%w: %v", impl.ErrClosed, err)
	}
	return nil
}

// Recv reads the next message; impl.ErrClosed once the connection is gone (or sent garbage, which
// closes it).
func (p *Pipe) Recv() (impl.Message, error) {
	if !p.in.Scan() {
		err := p.in.Err()
		p.Close()
		if err == nil {
			return impl.Message{}, impl.ErrClosed
		}
		return impl.Message{}, fmt.Errorf("%w: %v", impl.ErrClosed, err)
	}
	var f frame
	if err := json.Unmarshal(p.in.Bytes(), &f); err != nil {
		p.Close()
		return impl.Message{}, fmt.Errorf("%w: bad frame: %v", impl.ErrClosed, err)
	}
	if p.want != "" {
		if why := p.check(f); why != "" {
			if p.refused != nil {
				p.refused(f.HostID, p.RemoteAddr(), why)
			}
			p.Close()
			return impl.Message{}, fmt.Errorf("%w: refused: %s", impl.ErrClosed, why)
		}
	}
	return f.Message, nil
}

// check says why the server refuses f ("": it does not): a connection starts with a StartupCommand,
// and every StartupCommand carries the agent key.
func (p *Pipe) check(f frame) string {
	switch {
	case f.Kind != impl.MsgStartup && !p.authed:
		return fmt.Sprintf("a %s before any StartupCommand", f.Kind)
	case f.Kind != impl.MsgStartup:
		return ""
	case f.Key == "":
		return "no agent key (the agent's $CSCONFORM_AGENT_KEY or --agent-key-file)"
	case subtle.ConstantTimeCompare([]byte(f.Key), []byte(p.want)) != 1:
		return "wrong agent key"
	}
	p.authed = true
	return ""
}

// Close closes the connection; the peer's Recv ends.
func (p *Pipe) Close() {
	p.once.Do(func() {
		p.c.Close()
		if p.onClose != nil {
			p.onClose()
		}
	})
}

// RemoteAddr is the peer's address.
func (p *Pipe) RemoteAddr() string { return p.c.RemoteAddr().String() }

var (
	_ impl.Transport = (*Listener)(nil)
	_ impl.Transport = (*Dialer)(nil)
	_ impl.Pipe      = (*Pipe)(nil)
)
