package main

// csconform hypervisor: a host's simulated domains in a process of their own, which its agent reaches
// over a unix socket (as cloudstack-agent reaches libvirtd), and the agent's fault hooks. The
// container driver runs one per host next to the host's agent container, so a restarted, killed or
// paused agent leaves the domains running.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/impl"
)

const hypervisorUsage = `Usage:
  csconform hypervisor --host ID --socket PATH [--listen ADDR]

Runs the simulated domains of one host (no libvirt: FAKE domains in this process, in real time).
Agents use it with csconform agent --hypervisor unix:PATH. --listen serves the same HTTP API on TCP
for the harness: GET /domains (the truth: running domains, IPs, disks), and the host's faults:
POST /crash?name=[&detail=FAILED|CRASHED] (the domain's QEMU dies or its guest panics),
POST /guestShutdown?name= (the guest powers itself off) and POST /routerBoot?d=DURATION (router
guests created from now on take d to say ready; 0 restores the default, 1 s).
`

func hypervisorCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hypervisor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hostID := fs.String("host", "", "")
	socket := fs.String("socket", "", "")
	listen := fs.String("listen", "", "")
	fs.Usage = func() { fmt.Fprint(stderr, hypervisorUsage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform hypervisor:", err); return 2 }
	if *hostID == "" || *socket == "" || fs.NArg() > 0 {
		return fail(errors.New("--host and --socket are required, and nothing else"))
	}
	env := live.NewEnv()
	defer env.Close()
	h := live.NewFakeHost(env, *hostID)
	handler := live.HypervisorHandler(h)
	os.Remove(*socket)
	uln, err := net.Listen("unix", *socket)
	if err != nil {
		return fail(err)
	}
	defer uln.Close()
	go (&http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}).Serve(uln)
	if *listen != "" {
		tln, err := net.Listen("tcp", *listen)
		if err != nil {
			return fail(err)
		}
		defer tln.Close()
		go (&http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}).Serve(tln)
		fmt.Fprintf(stdout, "hypervisor %s: truth on http://%s\n", *hostID, tln.Addr())
	}
	fmt.Fprintf(stdout, "hypervisor %s: simulated domains (no libvirt) on unix:%s\n", *hostID, *socket)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return 0
}

// newRemoteHypervisor reaches a csconform hypervisor process on the unix socket path.
func newRemoteHypervisor(env *live.Env, _, path string, _ hvFlags) (impl.Hypervisor, error) {
	if path == "" {
		return nil, errors.New("unix:PATH needs the socket's path")
	}
	h := live.NewRemoteHost(env, path)
	var err error
	for i := 0; i < 50; i++ { // the hypervisor may still be starting
		if err = h.Ping(); err == nil {
			return h, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, err
}

// agentDialer is the agent's transport; with faultsAddr it also serves the agent's fault hook
// POST /delayNextOutOfBand?d=1500ms: the next out-of-band report reaches the server that late (sent
// after the delay; later messages overtake it, as with CloudStack's agent thread pool). With hold
// (an agent on real libvirt domains) a StartCommand arriving while that report is armed and not yet
// collected waits on the wire, staleHold at most, and the delay counts from that start's answer:
// harness/libvirt.go's staleHold, the order seed 001 needs on real domains. With routerBoot (an
// agent on real libvirt domains) it also serves POST /routerBoot?d=36s: routers started from now on
// say ready that long after reaching userspace (0: back to --router-boot), the slow-router-boot fault
// that a hypervisor container serves for simulated domains.
func agentDialer(server, faultsAddr string, hold bool, routerBoot func(time.Duration), stdout, stderr io.Writer) (impl.Transport, error) {
	d := &staleDialer{Dialer: live.Dialer{Addr: server}, hold: hold, log: stderr}
	if faultsAddr == "" {
		return d, nil
	}
	ln, err := net.Listen("tcp", faultsAddr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /delayNextOutOfBand", func(w http.ResponseWriter, r *http.Request) {
		v, err := time.ParseDuration(r.FormValue("d"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		d.arm(v)
		writeJSON(w, http.StatusOK, map[string]string{"delay": v.String()})
	})
	if routerBoot != nil {
		mux.HandleFunc("POST /routerBoot", func(w http.ResponseWriter, r *http.Request) {
			v, err := time.ParseDuration(r.FormValue("d"))
			if err == nil && v < 0 {
				err = fmt.Errorf("negative router boot %s", v)
			}
			if err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
				return
			}
			routerBoot(v)
			writeJSON(w, http.StatusOK, map[string]string{"routerBoot": v.String()})
		})
	}
	go (&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
	fmt.Fprintf(stdout, "agent fault hooks on http://%s\n", ln.Addr())
	return d, nil
}

// staleHold is how long at most a StartCommand waits on the wire for an armed stale report to be
// collected (as in harness/libvirt.go).
const staleHold = 5 * time.Second

type staleDialer struct {
	live.Dialer
	hold bool
	log  io.Writer

	mu        sync.Mutex
	stale     time.Duration // delay of the next out-of-band report (0: none armed)
	collected chan struct{} // closed when the armed report is collected
	held      *heldStart    // the StartCommand held for it
}

type heldStart struct {
	seq      int64
	answered chan struct{}
}

func (d *staleDialer) arm(v time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stale == 0 {
		d.collected = make(chan struct{})
	}
	d.stale = v
}

// take disarms the stale report and returns its delay and, with hold, the answer of the
// StartCommand held for it (nil: none).
func (d *staleDialer) take() (time.Duration, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.stale
	var answered chan struct{}
	if v > 0 {
		d.stale = 0
		close(d.collected)
		if d.held != nil {
			answered = d.held.answered
		}
	}
	return v, answered
}

// holdStart registers StartCommand seq as held if a stale report is armed, and returns the channel
// closed when that report is collected (nil: nothing armed, no hold).
func (d *staleDialer) holdStart(seq int64) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stale == 0 {
		return nil
	}
	d.held = &heldStart{seq: seq, answered: make(chan struct{})}
	return d.collected
}

func (d *staleDialer) Dial(hostID string) (impl.Pipe, error) {
	p, err := d.Dialer.Dial(hostID)
	if err != nil {
		return nil, err
	}
	return &stalePipe{Pipe: p, d: d}, nil
}

type stalePipe struct {
	impl.Pipe
	d *staleDialer
}

func (p *stalePipe) Send(m impl.Message) error {
	if m.Kind == impl.MsgPing && m.OutOfBand {
		if v, answered := p.d.take(); v > 0 {
			go func() {
				if answered != nil {
					select {
					case <-answered:
					case <-time.After(time.Minute):
					}
				}
				time.Sleep(v)
				_ = p.Pipe.Send(m)
			}()
			return nil
		}
	}
	if m.Kind == impl.MsgAnswer && p.d.hold {
		p.d.mu.Lock()
		if hs := p.d.held; hs != nil && hs.seq == m.Seq {
			p.d.held = nil
			close(hs.answered)
		}
		p.d.mu.Unlock()
	}
	return p.Pipe.Send(m)
}

// Recv holds a StartCommand while a stale report is armed and not yet collected (with hold).
func (p *stalePipe) Recv() (impl.Message, error) {
	m, err := p.Pipe.Recv()
	if err != nil || m.Kind != impl.MsgStart || !p.d.hold {
		return m, err
	}
	if ch := p.d.holdStart(m.Seq); ch != nil {
		t0 := time.Now()
		t := time.NewTimer(staleHold)
		defer t.Stop()
		how := "collected"
		select {
		case <-ch:
		case <-t.C:
			how = "not collected"
		}
		fmt.Fprintf(p.d.log, "csconform agent: StartCommand held on the wire %d ms while a stale report is armed (%s)\n", time.Since(t0).Milliseconds(), how)
	}
	return m, nil
}
