package main

// csconform server and csconform agent: the reference management server and its agents as separate
// processes speaking over TCP (drivers/live), in real time.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/csconform/csconform/drivers/control"
	"github.com/csconform/csconform/drivers/libvirt"
	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/drivers/live/process"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/impl/cloudapi"
)

// hypervisors are the --hypervisor choices, NAME or NAME:ARG: each builds the hypervisor of one host.
var hypervisors = map[string]struct {
	syntax, doc string
	new         func(env *live.Env, hostID, arg string, o hvFlags) (impl.Hypervisor, error)
}{
	"sim": {"sim", "in-process FAKE hypervisor in real time, no real domains", func(env *live.Env, id, arg string, _ hvFlags) (impl.Hypervisor, error) {
		if arg != "" {
			return nil, fmt.Errorf("sim takes no argument, got %q", arg)
		}
		return live.NewFakeHost(env, id), nil
	}},
	"unix":    {"unix:PATH", "a csconform hypervisor process on a unix socket:\nsimulated domains that outlive the agent", newRemoteHypervisor},
	"libvirt": {"libvirt[:URI]", "real QEMU domains on libvirtd (default " + libvirt.DefaultURI + "),\nnamed and labelled as the libvirt driver's; they outlive\nthe agent; needs --run", newLibvirtHypervisor},
}

// hvFlags are the agent's flags a hypervisor may need.
type hvFlags struct {
	run, runDir, guestDir, virtType string
	routerBoot                      time.Duration
	// routerBootNow is the router boot in force (the slow-router-boot fault's hook changes it); nil
	// until the agent starts, then --router-boot.
	routerBootNow *atomic.Int64
}

func hypervisorNames() string {
	var names []string
	for _, h := range hypervisors {
		names = append(names, h.syntax)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// hypervisorDocs lists the --hypervisor choices for the agent's help.
func hypervisorDocs() string {
	var names []string
	for n := range hypervisors {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		doc := strings.ReplaceAll(hypervisors[n].doc, "\n", "\n"+strings.Repeat(" ", 17))
		fmt.Fprintf(&b, "\n  %-14s %s", hypervisors[n].syntax, doc)
	}
	return b.String()
}

// configFlags collects repeated --config KEY=VALUE.
type configFlags map[string]string

func (c configFlags) String() string { return "" }
func (c configFlags) Type() string   { return "KEY=VALUE" }
func (c configFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	c[k] = val
	return nil
}

func serverCmd(o *serverOpts, stdout, stderr io.Writer) int {
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform server:", err); return 2 }
	sw, err := switches(&o.profile, o.defects)
	if err != nil {
		return fail(err)
	}
	cfg, err := impl.NewConfig(o.overrides)
	if err != nil {
		return fail(err)
	}
	// Bad credential flags are bad input: refused before anything is bound or written.
	var creds cloudapi.Credentials
	var credsFile string
	if o.apiAddr != "" {
		if o.secretKey != "" {
			fmt.Fprintf(stderr, "csconform server: warning: --secret-key on the command line is visible to every local user (ps, /proc/PID/cmdline); give it in $%s or --api-keys-file\n", envSecretKey)
		}
		var generated bool
		if creds, credsFile, generated, err = apiCredentials(o.apiKey, o.secretKey, o.keysFile); err != nil {
			return fail(err)
		}
		if generated && o.keysFile == "" {
			// made in the temporary directory for this run only: gone when the server stops, however
			// it stops short of a kill (a bad flag later on, SIGINT, SIGTERM)
			defer os.Remove(credsFile)
		}
	}
	sink, closeSink, err := live.NewLogSink(stderr, o.verbose, o.historyFile)
	if err != nil {
		return fail(err)
	}
	defer closeSink()
	ln, err := live.Listen(o.listen)
	if err != nil {
		return fail(fmt.Errorf("agent listener: %w", err))
	}
	defer ln.Close()
	cl, err := net.Listen("tcp", o.controlAddr)
	if err != nil {
		return fail(fmt.Errorf("control endpoint: %w", err))
	}
	defer cl.Close()
	if err := control.CheckAddr(o.controlAddr, cl.Addr(), o.controlAny); err != nil {
		return fail(err)
	}
	var al net.Listener
	if o.apiAddr != "" {
		if al, err = net.Listen("tcp", o.apiAddr); err != nil {
			return fail(fmt.Errorf("api endpoint: %w", err))
		}
	}
	ms, err := process.Open(sink, o.stateFile)
	if err != nil {
		return fail(err)
	}
	defer ms.Close()
	// last, so that a server that cannot start leaves no generated token or key file behind
	token, tokenWritten, err := control.Token(o.tokenFile)
	if err != nil {
		return fail(err)
	}
	if tokenWritten != "" && o.tokenFile == "" {
		defer os.Remove(tokenWritten) // as the keys file
	}
	key, keyWritten, err := control.AgentKey(o.agentKeyFile, true)
	if err != nil {
		return fail(err)
	}
	if keyWritten != "" && o.agentKeyFile == "" {
		defer os.Remove(keyWritten) // generated in the temporary directory: gone with the server
	}
	// From here on SIGINT and SIGTERM stop the server the orderly way, the files above removed: a signal
	// that came before the handler, just after the server said where it listens, killed it outright.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ms.Start(process.Options{ID: o.id, Config: cfg, Switches: sw, Sink: sink, Agents: ln, AgentKey: key, Control: cl, ControlToken: token,
		API: al, Credentials: creds, Logf: func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }})

	if keyWritten != "" {
		fmt.Fprintf(stdout, "agent key in %s\n", keyWritten)
	}
	fmt.Fprintf(stdout, "agents listening on %s\n", ln.Addr())
	if tokenWritten != "" {
		fmt.Fprintf(stdout, "control token in %s\n", tokenWritten)
	}
	fmt.Fprintf(stdout, "control listening on http://%s\n", cl.Addr())
	if al != nil {
		if credsFile != "" {
			fmt.Fprintf(stdout, "api keys in %s\n", credsFile)
		}
		fmt.Fprintf(stdout, "api listening on http://%s/client/api\n", al.Addr())
	}
	<-ctx.Done()
	fmt.Fprintf(stderr, "csconform server: %s stopping\n", o.id)
	// the API and control endpoint stop first and the state file is detached last: every write
	// answered with success is on disk, and what the stopping tasks do after is not, as at a kill
	ms.Shutdown()
	return 0
}

// agentCmd runs one host's agent over TCP until SIGINT or SIGTERM.
func agentCmd(o *agentOpts, stdout, stderr io.Writer) int {
	hf := &o.hf
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform agent:", err); return 2 }
	switch {
	case o.hostID == "":
		return fail(errors.New("--host is required"))
	case o.server == "":
		return fail(errors.New("--server is required"))
	}
	sw, err := switches(&o.profile, o.defects)
	if err != nil {
		return fail(err)
	}
	hvKind, hvArg, _ := strings.Cut(o.hvName, ":")
	if _, ok := hypervisors[hvKind]; !ok {
		return fail(fmt.Errorf("unknown hypervisor %q; this build has: %s", o.hvName, hypervisorNames()))
	}
	switch {
	case hvKind == "libvirt" && hf.run == "":
		return fail(errors.New("--hypervisor libvirt needs --run (or $CSCONFORM_RUN): the domains' label, by which a restarted agent finds them"))
	case hf.virtType != "" && hf.virtType != "kvm" && hf.virtType != "qemu":
		return fail(fmt.Errorf("--virt-type %q: want kvm or qemu", hf.virtType))
	case hf.routerBoot < 0:
		return fail(fmt.Errorf("--router-boot %s: negative", hf.routerBoot))
	}
	key, _, err := control.AgentKey(o.keyFile, false)
	if err != nil {
		return fail(fmt.Errorf("%v (the server's key: it takes a StartupCommand only with it)", err))
	}
	// The agent retries its connection for ever once running; a server that cannot be reached at
	// start is a mistake to report, not to wait out.
	probe, err := net.DialTimeout("tcp", o.server, 5*time.Second)
	if err != nil {
		return fail(fmt.Errorf("cannot reach the management server at %s: %v", o.server, err))
	}
	probe.Close()
	sink, closeSink, err := live.NewLogSink(stderr, o.verbose, o.historyFile)
	if err != nil {
		return fail(err)
	}
	defer closeSink()
	env := live.NewEnv()
	defer env.Close()
	hf.routerBootNow = new(atomic.Int64)
	hf.routerBootNow.Store(int64(hf.routerBoot))
	h, err := hypervisors[hvKind].new(env, o.hostID, hvArg, *hf)
	if err != nil {
		return fail(err)
	}
	if c, ok := h.(io.Closer); ok {
		defer c.Close() // the connection only: domains keep running
	}
	var routerBoot func(time.Duration)
	if hvKind == "libvirt" {
		routerBoot = func(d time.Duration) {
			if d == 0 {
				d = hf.routerBoot
			}
			hf.routerBootNow.Store(int64(d))
		}
	}
	tr, err := agentDialer(o.server, key, o.faultsAddr, o.tokenFile, hvKind == "libvirt", routerBoot, stdout, stderr)
	if err != nil {
		return fail(err)
	}
	// before the agent starts and says so: a signal just after would otherwise kill it outright
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := impl.NewAgent(o.hostID, env, tr, h, sink)
	a.Defects = sw
	a.Start()
	desc := o.hvName
	if d, ok := h.(interface{ Describe() string }); ok {
		desc += " (" + d.Describe() + ")"
	}
	fmt.Fprintf(stdout, "agent %s: management server %s, hypervisor %s\n", o.hostID, o.server, desc)
	<-ctx.Done()
	fmt.Fprintf(stderr, "csconform agent: %s shutting down\n", o.hostID)
	a.Shutdown() // ShutdownCommand, then the socket closes; domains keep running
	return 0
}
