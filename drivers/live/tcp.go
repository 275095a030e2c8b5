package live

import (
	"bufio"
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

// MaxFrame bounds one message on the wire.
const MaxFrame = 4 << 20

// WriteTimeout bounds one Send: a peer that stops reading (its buffers full) fails the send instead
// of blocking the sending thread for ever. The connection is closed after such a failure, since a
// partly written frame cannot be continued.
var WriteTimeout = 30 * time.Second

// Listener is the management server's side of the transport.
type Listener struct {
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

// Accept waits for the next agent connection; impl.ErrClosed once the listener is closed.
func (l *Listener) Accept() (impl.Pipe, error) {
	c, err := l.ln.Accept()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", impl.ErrClosed, err)
	}
	p := newPipe(c)
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
	return newPipe(c), nil
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
}

func newPipe(c net.Conn) *Pipe {
	in := bufio.NewScanner(c)
	in.Buffer(make([]byte, 64<<10), MaxFrame)
	return &Pipe{c: c, in: in}
}

// Send writes one message.
func (p *Pipe) Send(m impl.Message) error {
	b, err := json.Marshal(m)
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
	var m impl.Message
	if err := json.Unmarshal(p.in.Bytes(), &m); err != nil {
		p.Close()
		return impl.Message{}, fmt.Errorf("%w: bad frame: %v", impl.ErrClosed, err)
	}
	return m, nil
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
