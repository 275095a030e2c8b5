package main

// csconform server and csconform agent: the reference management server and its agents as separate
// processes speaking over TCP (drivers/live), in real time.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/csconform/csconform/drivers/libvirt"
	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/impl/cloudapi"
	"github.com/csconform/csconform/model/history"
)

const serveUsage = `Usage:
  csconform server [--listen ADDR] [--control ADDR] [--control-token-file FILE] [--id MSID]
                   [--profile P|--defects LIST] [--config KEY=VALUE ...] [--state FILE]
                   [--history FILE] [--verbose]
                   [--api ADDR [--api-key KEY --secret-key SECRET | --api-keys-file FILE]]
  csconform agent  --host ID --server ADDR [--hypervisor sim|unix:PATH|libvirt[:URI]] [--faults ADDR]
                   [--run ID] [--run-dir DIR] [--guest-dir DIR] [--virt-type kvm|qemu]
                   [--router-boot DURATION] [--history FILE] [--verbose]

server flags:
  --listen ADDR       where agents connect (default 127.0.0.1:8250)
  --control ADDR      the control endpoint, JSON over HTTP (default 127.0.0.1:8096, loopback only: it
                      drives everything the server does); GET / lists it. Every request needs the
                      header "Authorization: Bearer TOKEN" (else 401), the token being
                      $CSCONFORM_CONTROL_TOKEN; else the one in --control-token-file; else a
                      generated one, written to a new 0600 file (--control-token-file, or one in the
                      temporary directory) whose path is printed. The token is never printed or logged.
  --control-token-file FILE
                      where the control token is read from, or written to when generated
  --id MSID           management server id (default ms1)
  --profile P         cloudstack-4.22 or fixed (default cloudstack-4.22)
  --defects LIST      switch on exactly these defects instead (D1,D2a,...; none)
  --config KEY=VALUE  a configuration override, repeatable (csconform config lists the keys)
  --state FILE        keep the database in FILE, as CloudStack keeps it in MySQL: loaded at start when
                      FILE exists, and every committed write is on disk (FILE.tmp, fsync, rename)
                      before the write returns, so a server killed at any moment and started again
                      with the same FILE and --id finds every record (its in-flight jobs are then
                      cleaned up at startup, as CloudStack does). Default: in memory, lost at exit
  --api ADDR          also serve CloudStack's API (signed requests, as cloudstack-go sends them) at
                      http://ADDR/client/api; off by default
  --api-key KEY, --secret-key SECRET
                      the API's key pair; else $CSCONFORM_API_KEY and $CSCONFORM_SECRET_KEY; else
                      the pair in --api-keys-file; else a generated pair, written to a new 0600 file
                      (--api-keys-file, or one in the temporary directory) whose path is printed.
                      The secret is never printed or logged.
agent flags:
  --host ID           the host this agent serves
  --server ADDR       the management server's --listen address
  --hypervisor NAME   where domains run (default sim):` + "%s" + `
  --faults ADDR       serve the agent's fault hook (POST /delayNextOutOfBand?d=DURATION) on ADDR
libvirt agent flags (as the libvirt driver names and labels domains, so csconform cleanup finds them):
  --run ID            the run the domains belong to (default $CSCONFORM_RUN; required): a restarted
                      agent with the same --run and --host finds its running domains again
  --run-dir DIR       base directory of run files: volumes, serial logs (default $CSCONFORM_RUN_DIR or
                      /var/lib/csconform); libvirtd opens them by path, so in a container mount it
                      at the same path as on the host
  --guest-dir DIR     the guest from ci/build-guest.sh (default $CSCONFORM_GUEST_DIR or
                      /var/cache/csconform/guest), also opened by libvirtd by path
  --virt-type T       kvm or qemu (TCG); default: detected (a KVM probe, cached in --run-dir)
  --router-boot D     a router's boot delay after reaching userspace (default 36s, as CloudStack's)
both:
  --history FILE      append every event as JSON lines to FILE
  --verbose           log DEBUG lines too (default: INFO and up, and every state change)

The server prints "agents listening on ADDR", "control listening on http://ADDR" (after "control
token in FILE" when it generated the token) and, with --api, "api listening on
http://ADDR/client/api" once ready.
SIGINT/SIGTERM: the agent sends a ShutdownCommand and exits; the server stops, writing nothing more
to its --state FILE (the file is as a kill at that moment would leave it). Exit status 2 on bad
flags, an unreadable or unwritable --state FILE, or an unreachable management server.
`

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

func hypervisorDocs() string {
	var names []string
	for n := range hypervisors {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		doc := strings.ReplaceAll(hypervisors[n].doc, "\n", "\n"+strings.Repeat(" ", 39))
		fmt.Fprintf(&b, "\n                        %-14s %s", hypervisors[n].syntax, doc)
	}
	return b.String()
}

func printServeUsage(w io.Writer) { fmt.Fprintf(w, serveUsage, hypervisorDocs()) }

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

// logSink prints events as log lines and, with --history, appends them as JSON lines.
type logSink struct {
	mu      sync.Mutex
	w       io.Writer
	verbose bool
	hist    *json.Encoder
	seq     int64
}

func (s *logSink) Emit(e history.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	s.seq++
	e.Seq = s.seq
	if s.hist != nil {
		s.hist.Encode(e)
	}
	ts := e.Time.UTC().Format("2006-01-02T15:04:05.000Z")
	switch {
	case e.Kind == history.Log && (e.Level != "DEBUG" || s.verbose):
		fmt.Fprintf(s.w, "%s %-5s [%s] %s %s\n", ts, e.Level, e.Actor, e.Object, e.Detail)
	case e.Kind == history.State:
		fmt.Fprintf(s.w, "%s STATE [%s] %s %s -> %s (%s)\n", ts, e.Actor, e.Object, orDash(e.From), e.To, e.Detail)
	case e.Kind != history.Log && s.verbose:
		fmt.Fprintf(s.w, "%s %-5s [%s] %s %s -> %s %s\n", ts, e.Kind, e.Actor, e.Object, orDash(e.From), e.To, e.Detail)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newLogSink(stderr io.Writer, verbose bool, historyFile string) (*logSink, func(), error) {
	s := &logSink{w: stderr, verbose: verbose}
	if historyFile == "" {
		return s, func() {}, nil
	}
	// appending to a history (a restarted server): its numbers go on, as csconform check needs
	last, err := history.LastSeq(historyFile)
	if err != nil {
		return nil, nil, err
	}
	s.seq = last
	f, err := os.OpenFile(historyFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	s.hist = json.NewEncoder(f)
	return s, func() { s.mu.Lock(); f.Close(); s.hist = nil; s.mu.Unlock() }, nil
}

// parseServe parses flags, accepting no positional arguments: -1 to go on, else the exit status.
func parseServe(name string, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printServeUsage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "csconform %s: see csconform %s -h\n", name, name)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "csconform %s: unexpected argument %q\n", name, fs.Arg(0))
		return 2
	}
	return -1
}

func serverCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8250", "")
	controlAddr := fs.String("control", "127.0.0.1:8096", "")
	id := fs.String("id", "ms1", "")
	profile := fs.String("profile", "cloudstack-4.22", "")
	defects := fs.String("defects", "", "")
	historyFile := fs.String("history", "", "")
	stateFile := fs.String("state", "", "")
	verbose := fs.Bool("verbose", false, "")
	apiAddr := fs.String("api", "", "")
	apiKey := fs.String("api-key", "", "")
	secretKey := fs.String("secret-key", "", "")
	keysFile := fs.String("api-keys-file", "", "")
	tokenFile := fs.String("control-token-file", "", "")
	overrides := configFlags{}
	fs.Var(overrides, "config", "")
	if code := parseServe("server", fs, args, stdout, stderr); code >= 0 {
		return code
	}
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform server:", err); return 2 }
	var sw impl.Switches
	var err error
	if *defects != "" {
		sw, err = impl.ParseDefects(*defects)
	} else {
		sw, err = impl.Profile(*profile)
	}
	if err != nil {
		return fail(err)
	}
	cfg, err := impl.NewConfig(overrides)
	if err != nil {
		return fail(err)
	}
	// Bad credential flags are bad input: refused before anything is bound or written.
	var creds cloudapi.Credentials
	var credsFile string
	if *apiAddr != "" {
		if creds, credsFile, err = apiCredentials(*apiKey, *secretKey, *keysFile); err != nil {
			return fail(err)
		}
	}
	sink, closeSink, err := newLogSink(stderr, *verbose, *historyFile)
	if err != nil {
		return fail(err)
	}
	defer closeSink()
	ln, err := live.Listen(*listen)
	if err != nil {
		return fail(fmt.Errorf("agent listener: %w", err))
	}
	defer ln.Close()
	cl, err := net.Listen("tcp", *controlAddr)
	if err != nil {
		return fail(fmt.Errorf("control endpoint: %w", err))
	}
	var al net.Listener
	if *apiAddr != "" {
		if al, err = net.Listen("tcp", *apiAddr); err != nil {
			return fail(fmt.Errorf("api endpoint: %w", err))
		}
	}
	env := live.NewEnv()
	defer env.Close()
	db := impl.NewDB(env, sink)
	if *stateFile != "" {
		if db, err = impl.OpenDB(env, sink, *stateFile); err != nil {
			return fail(err)
		}
	}
	// last, so that a server that cannot start leaves no generated token file behind
	token, tokenWritten, err := controlToken(*tokenFile)
	if err != nil {
		return fail(err)
	}
	srv := impl.NewServer(*id, env, db, cfg, sw, ln)
	srv.Start()
	hs := &http.Server{Handler: newControl(srv, db, cfg, token), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(cl)
	var as *http.Server
	if al != nil {
		mux := http.NewServeMux()
		mux.Handle("/client/api", cloudapi.New(srv, cloudapi.Options{Logf: func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }}, creds))
		as = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go as.Serve(al)
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	// Like a kill: what the threads still do while the process stops never reaches the database's
	// file (it would not reach MySQL from a dead server either).
	db.Detach()
	fmt.Fprintf(stderr, "csconform server: %s stopping\n", *id)
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	if as != nil {
		as.Shutdown(sctx)
	}
	return 0
}

func agentCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	hostID := fs.String("host", "", "")
	server := fs.String("server", "", "")
	hvName := fs.String("hypervisor", "sim", "")
	faultsAddr := fs.String("faults", "", "")
	var hf hvFlags
	fs.StringVar(&hf.run, "run", os.Getenv("CSCONFORM_RUN"), "")
	fs.StringVar(&hf.runDir, "run-dir", "", "")
	fs.StringVar(&hf.guestDir, "guest-dir", "", "")
	fs.StringVar(&hf.virtType, "virt-type", "", "")
	fs.DurationVar(&hf.routerBoot, "router-boot", libvirt.DefaultBootDelay(impl.DomainSpec{Type: "DomainRouter"}), "")
	historyFile := fs.String("history", "", "")
	verbose := fs.Bool("verbose", false, "")
	if code := parseServe("agent", fs, args, stdout, stderr); code >= 0 {
		return code
	}
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform agent:", err); return 2 }
	switch {
	case *hostID == "":
		return fail(errors.New("--host is required"))
	case *server == "":
		return fail(errors.New("--server is required"))
	}
	hvKind, hvArg, _ := strings.Cut(*hvName, ":")
	if _, ok := hypervisors[hvKind]; !ok {
		return fail(fmt.Errorf("unknown hypervisor %q; this build has: %s", *hvName, hypervisorNames()))
	}
	switch {
	case hvKind == "libvirt" && hf.run == "":
		return fail(errors.New("--hypervisor libvirt needs --run (or $CSCONFORM_RUN): the domains' label, by which a restarted agent finds them"))
	case hf.virtType != "" && hf.virtType != "kvm" && hf.virtType != "qemu":
		return fail(fmt.Errorf("--virt-type %q: want kvm or qemu", hf.virtType))
	case hf.routerBoot < 0:
		return fail(fmt.Errorf("--router-boot %s: negative", hf.routerBoot))
	}
	// The agent retries its connection for ever once running; a server that cannot be reached at
	// start is a mistake to report, not to wait out.
	probe, err := net.DialTimeout("tcp", *server, 5*time.Second)
	if err != nil {
		return fail(fmt.Errorf("cannot reach the management server at %s: %v", *server, err))
	}
	probe.Close()
	sink, closeSink, err := newLogSink(stderr, *verbose, *historyFile)
	if err != nil {
		return fail(err)
	}
	defer closeSink()
	env := live.NewEnv()
	defer env.Close()
	hf.routerBootNow = new(atomic.Int64)
	hf.routerBootNow.Store(int64(hf.routerBoot))
	h, err := hypervisors[hvKind].new(env, *hostID, hvArg, hf)
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
	tr, err := agentDialer(*server, *faultsAddr, hvKind == "libvirt", routerBoot, stdout, stderr)
	if err != nil {
		return fail(err)
	}
	a := impl.NewAgent(*hostID, env, tr, h, sink)
	a.Start()
	desc := *hvName
	if d, ok := h.(interface{ Describe() string }); ok {
		desc += " (" + d.Describe() + ")"
	}
	fmt.Fprintf(stdout, "agent %s: management server %s, hypervisor %s\n", *hostID, *server, desc)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	fmt.Fprintf(stderr, "csconform agent: %s shutting down\n", *hostID)
	a.Shutdown() // ShutdownCommand, then the socket closes; domains keep running
	return 0
}
