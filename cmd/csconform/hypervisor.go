package main

// csconform hypervisor: a host's simulated domains in a process of their own, which its agent reaches
// over a unix socket (as cloudstack-agent reaches libvirtd), and the agent's fault hooks. The
// container driver runs one per host next to the host's agent container, so a restarted, killed or
// paused agent leaves the domains running.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/csconform/csconform/drivers/control"
	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/impl"
)

// hypervisorCmd serves one host's simulated domains on a unix socket (and --listen) until SIGINT or
// SIGTERM.
func hypervisorCmd(o *hypervisorOpts, stdout, stderr io.Writer) int {
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform hypervisor:", err); return 2 }
	if o.hostID == "" || o.socket == "" {
		return fail(errors.New("--host and --socket are required, and nothing else"))
	}
	env := live.NewEnv()
	defer env.Close()
	h := live.NewFakeHost(env, o.hostID)
	handler := live.HypervisorHandler(h)
	os.Remove(o.socket)
	uln, err := net.Listen("unix", o.socket)
	if err != nil {
		return fail(err)
	}
	defer uln.Close()
	if err := os.Chmod(o.socket, 0o600); err != nil { // the agent runs as the same user
		return fail(err)
	}
	// before it serves and says where: a signal just after would otherwise kill it outright
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go (&http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}).Serve(uln)
	if o.listen != "" {
		tln, err := net.Listen("tcp", o.listen)
		if err != nil {
			return fail(err)
		}
		defer tln.Close()
		token, written, err := control.Token(o.tokenFile)
		if err != nil {
			return fail(err)
		}
		// the truth open, the hooks locked; the unix socket stays as it is, for the agent: only its
		// owner can connect to it
		go (&http.Server{Handler: control.TruthOpen(token, handler), ReadHeaderTimeout: 10 * time.Second}).Serve(tln)
		if written != "" {
			fmt.Fprintf(stdout, "control token in %s\n", written)
		}
		fmt.Fprintf(stdout, "hypervisor %s: truth on http://%s\n", o.hostID, tln.Addr())
	}
	fmt.Fprintf(stdout, "hypervisor %s: simulated domains (no libvirt) on unix:%s\n", o.hostID, o.socket)
	<-ctx.Done()
	return 0
}

// newRemoteHypervisor reaches a csconform hypervisor process on the unix socket path.
func newRemoteHypervisor(env *live.Env, _, path string, _ hvFlags) (impl.Hypervisor, error) {
	if path == "" {
		return nil, errors.New("unix:PATH needs the socket's path")
	}
	h, err := live.DialRemoteHost(env, path)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// agentDialer is the agent's transport, presenting key in its StartupCommand; with faultsAddr it also
// serves the agent's fault hooks (control.AgentHooks): POST /delayNextOutOfBand arms a
// live.StaleReport, the next out-of-band report reaching the server that late; with hold (an agent
// on real libvirt domains) a StartCommand arriving while that report is armed waits on the wire for
// its collection (live.StaleHold, the order seed 001 needs on real domains). With routerBoot (an
// agent on real libvirt domains) it also serves POST /routerBoot, the slow-router-boot fault that a
// hypervisor container serves for simulated domains.
func agentDialer(server, key, faultsAddr, tokenFile string, hold bool, routerBoot func(time.Duration), stdout, stderr io.Writer) (impl.Transport, error) {
	d := &live.StaleReport{Hold: hold, Log: func(detail string) { fmt.Fprintf(stderr, "csconform agent: %s\n", detail) }}
	tr := d.Wrap(&live.Dialer{Addr: server, Key: key})
	if faultsAddr == "" {
		return tr, nil
	}
	token, written, err := control.Token(tokenFile)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", faultsAddr)
	if err != nil {
		return nil, err
	}
	if written != "" {
		fmt.Fprintf(stdout, "control token in %s\n", written)
	}
	go (&http.Server{Handler: control.AgentHooks(token, d.Arm, routerBoot), ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
	fmt.Fprintf(stdout, "agent fault hooks on http://%s\n", ln.Addr())
	return tr, nil
}
