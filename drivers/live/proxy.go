package live

import (
	"net"
	"sync"
	"time"
)

// Proxy is a loopback TCP proxy in front of the management server, one per agent link, that can cut
// the link the way a network partition does: while cut, bytes in both directions — and a close from
// either end — are held, not dropped, and the connections stay open; on heal they flow again in order
// (TCP's retransmission delivers what was sent during a short partition). Neither end sees anything
// but silence, so only the application's pings and command waits notice, as in CloudStack.
//
// An end that closes during the cut leaves its unsent bytes to an orphaned socket, which the kernel
// retransmits only tcp_orphan_retries times (about 100 s on a LAN) before it gives them up: bytes an
// end sent and then closed on are dropped when the heal comes later than the orphan grace after the close
// (the close itself still reaches the other end); SetOrphanGrace sets it, and 0 keeps them. A server that declares its host disconnected closes
// the link with what it last wrote (a cleanup StopCommand, say) unsent; a long cut loses it.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	cond   *sync.Cond
	grace  time.Duration // how long held bytes of a closed end outlive the close (0: for ever)
	cut    bool
	heal   *time.Timer
	closed bool
	conns  map[net.Conn]struct{}
}

// NewProxy listens on listen ("127.0.0.1:0" picks a port) and forwards each connection to target.
func NewProxy(listen, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	go p.acceptLoop()
	return p, nil
}

// OrphanGrace is TCP's: a closed socket's unsent bytes are retransmitted tcp_orphan_retries times
// (0 means 8, with the RTO doubling from 200 ms: about 100 s) and then given up.
const OrphanGrace = 100 * time.Second

// SetOrphanGrace sets how long, in wall time, a closed end's held bytes outlive its close.
func (p *Proxy) SetOrphanGrace(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.grace = d
}

// Addr is the address to dial instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut holds all traffic until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.heal != nil {
		p.heal.Stop()
		p.heal = nil
	}
	p.cut = true
}

// Heal lets held and new traffic flow.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.heal != nil {
		p.heal.Stop()
		p.heal = nil
	}
	p.cut = false
	p.cond.Broadcast()
}

// Blackhole cuts the link for d, then heals it.
func (p *Proxy) Blackhole(d time.Duration) {
	p.Cut()
	p.mu.Lock()
	p.heal = time.AfterFunc(d, p.Heal)
	p.mu.Unlock()
}

// IsCut says whether traffic is held now.
func (p *Proxy) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// Close stops the proxy and closes every connection through it.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	if p.heal != nil {
		p.heal.Stop()
	}
	for c := range p.conns {
		c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	p.ln.Close()
}

func (p *Proxy) acceptLoop() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(client)
	}
}

func (p *Proxy) handle(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.conns[client] = struct{}{}
	p.conns[server] = struct{}{}
	p.mu.Unlock()
	closeBoth := func() {
		p.mu.Lock()
		delete(p.conns, client)
		delete(p.conns, server)
		p.mu.Unlock()
		client.Close()
		server.Close()
	}
	var once sync.Once
	done := func() { once.Do(closeBoth) }
	go p.pump(client, server, done)
	go p.pump(server, client, done)
}

// pump copies src to dst through a queue that is held while the link is cut. src's end (EOF or error)
// is queued too, so a close is delivered only once the link heals.
func (p *Proxy) pump(src, dst net.Conn, done func()) {
	var queue [][]byte
	ended := false
	var closedInCut time.Time // when src ended while the link was cut
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			p.mu.Lock()
			if n > 0 {
				queue = append(queue, append([]byte(nil), buf[:n]...))
			}
			if err != nil {
				ended = true
				if p.cut {
					closedInCut = time.Now()
				}
			}
			p.cond.Broadcast()
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	for {
		p.mu.Lock()
		for !p.closed && (p.cut || (len(queue) == 0 && !ended)) {
			p.cond.Wait()
		}
		if p.closed {
			p.mu.Unlock()
			done()
			return
		}
		out := queue
		queue = nil
		end := ended
		if end && p.grace > 0 && !closedInCut.IsZero() && time.Since(closedInCut) > p.grace {
			out = nil // the orphaned socket gave its bytes up before the link healed
		}
		p.mu.Unlock()
		for _, b := range out {
			if _, err := dst.Write(b); err != nil {
				done()
				return
			}
		}
		if end && len(out) == 0 {
			done()
			return
		}
	}
}
