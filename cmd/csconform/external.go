package main

// csconform repro --api: a scenario against a CloudStack the harness did not start (harness/world/external).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/conformance"
	"github.com/csconform/csconform/faults/inject"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/cloudclient"
	"github.com/csconform/csconform/harness/verdict"
	"github.com/csconform/csconform/harness/world/external"
	"github.com/spf13/pflag"
)

// mapFlags collects repeated NAME=VALUE.
type mapFlags map[string]string

func (m mapFlags) String() string { return "" }
func (m mapFlags) Type() string   { return "NAME=VALUE" }
func (m mapFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" || val == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", v)
	}
	if _, dup := m[k]; dup {
		return fmt.Errorf("%q given twice", k)
	}
	m[k] = val
	return nil
}

// extFlags are repro's flags for an external CloudStack.
type extFlags struct {
	api, apiKey, secretKey, keysFile      *string
	zone, offering, template, netOffering *string
	insecure                              *bool
	timeout, poll                         *time.Duration
	hosts                                 hostFlags
	hostsFromAPI, domainPrefix, labelRun  *string
	mapHost, sshTargets                   mapFlags
	expect                                *string
	allowHosts, allowVMs, sshOpts         []string
	maxTargets, mgmtPort                  *int
	yes, local, allowProxyCommand         *bool
	sshUser, auditLog                     *string
	faultSource                           *string
}

// addExternalFlags defines repro's flags for a run against an external CloudStack.
func addExternalFlags(fs *pflag.FlagSet) *extFlags {
	f := &extFlags{mapHost: mapFlags{}, sshTargets: mapFlags{}}
	f.api = fs.String("api", "", "run against the external CloudStack whose API is at `URL`, e.g. http://mgmt:8080/client/api")
	f.apiKey = fs.String("api-key", "", "the API `KEY` (else $CSCONFORM_API_KEY, else --api-keys-file); never printed or logged")
	f.secretKey = fs.String("secret-key", "", "the `SECRET` key (else $CSCONFORM_SECRET_KEY, else --api-keys-file); never printed or logged")
	f.keysFile = fs.String("api-keys-file", "", "the key pair as KEY=VALUE lines in `FILE`")
	f.zone = fs.String("zone", "", "--api: the `ZONE` to deploy in, id or name (default: the first usable one)")
	f.offering = fs.String("service-offering", "", "--api: the service `OFFERING`, id or name (default: the first usable one)")
	f.template = fs.String("template", "", "--api: the `TEMPLATE`, id or name (default: the first usable one)")
	f.netOffering = fs.String("network-offering", "", "--api: the network `OFFERING`, id or name (default: the first usable one)")
	f.insecure = fs.Bool("insecure", false, "--api: do not verify the API's TLS certificate")
	f.timeout = fs.Duration("timeout", 30*time.Second, "--api: the timeout `D` of one request")
	f.poll = fs.Duration("poll", time.Second, "--api: how often (`D`) the records and domains are read")
	fs.Var(&f.hosts, "host", "--api: a host (CloudStack's name) and where to read its domains: a libvirt URI, or http://ADDR (csconform hypervisor --listen); `NAME=URI`, repeatable")
	f.hostsFromAPI = fs.String("hosts-from-api", "", "--api: every host CloudStack lists, its URI from `TEMPLATE` ({name}, {id}, {ip}), instead of --host")
	f.domainPrefix = fs.String("domain-prefix", "", "--api: strip `P` from domain names to get instance names, as csconform audit has it")
	f.labelRun = fs.String("run", "", "--api: only the domains csconform run `ID` made, as csconform audit has it")
	fs.Var(f.mapHost, "map-host", "--api: a scenario host is this CloudStack host (`h1=NAME`; default: the same name); repeatable")
	f.expect = fs.String("expect", "", "--api: compare the outcome with the scenario's expectations for `PROFILE`")
	fs.StringArrayVar(&f.allowHosts, "allow-host", nil, "--api: hosts csconform inject may touch for a fault (shell `PATTERN`); repeatable")
	fs.StringArrayVar(&f.allowVMs, "allow-vm", nil, "--api: domains csconform inject may crash (shell `PATTERN`); repeatable")
	f.maxTargets = fs.Int("max-targets", 1, "--api: refuse a fault on more than `N` targets")
	f.yes = fs.Bool("yes", false, "--api: really inject the faults (else the run refuses them)")
	f.sshUser = fs.String("ssh-user", "root", "--api: the ssh `USER` for faults")
	fs.StringArrayVar(&f.sshOpts, "ssh-opt", nil, "--api: an extra ssh `OPT` for faults, repeatable (the allowlist is matched against what ssh -G resolves: the host and every ProxyJump host)")
	f.allowProxyCommand = fs.Bool("allow-proxy-command", false, "--api: let ssh connect through a ProxyCommand (--ssh-opt or ~/.ssh/config), whose target cannot be checked; refused without it")
	fs.Var(f.sshTargets, "ssh-target", "--api: reach this host over ssh at this address (`NAME=ADDR`); repeatable")
	f.local = fs.Bool("local", false, "--api: run the fault commands on this machine instead of over ssh")
	f.auditLog = fs.String("audit-log", "csconform-inject.log", "--api: csconform inject's append-only log `FILE` of the faults")
	f.mgmtPort = fs.Int("mgmt-port", 8250, "--api: the management server's agent `PORT` (disconnect)")
	f.faultSource = fs.String("faults", "inject", "--api: where the faults come from: `SOURCE` inject (csconform inject on the hosts) or simulator (configureSimulator on a CloudStack with the Simulator hypervisor, or csconform server --api)")
	return f
}

// externalOnly are the flags that mean nothing without --api.
var externalOnly = []string{"api-key", "secret-key", "api-keys-file", "zone", "service-offering", "template", "network-offering",
	"insecure", "timeout", "poll", "host", "hosts-from-api", "domain-prefix", "run", "map-host", "expect", "allow-host", "allow-vm",
	"max-targets", "yes", "ssh-user", "ssh-opt", "ssh-target", "local", "audit-log", "mgmt-port", "faults"}

// injectOnly are the flags of csconform inject's host access, which --faults simulator does not use.
var injectOnly = []string{"allow-host", "allow-vm", "max-targets", "yes", "ssh-user", "ssh-opt", "ssh-target", "local", "audit-log", "mgmt-port", "allow-proxy-command"}

// notWithAPI are repro's flags that mean nothing against an external CloudStack.
var notWithAPI = map[string]string{
	"profile": "there is no profile against an external CloudStack: --expect PROFILE compares the outcome with a profile's expectations",
	"defects": "the defects are the external CloudStack's own",
	"seed":    "an external CloudStack has no seed",
	"driver":  "--api is the driver",
	"uri":     "give the hosts with --host NAME=URI",
}

// options checks the flags and makes the external world's options; the closer releases the inject log.
func (f *extFlags) options(ctx context.Context, set map[string]bool, stderr io.Writer) (external.Options, func(), error) {
	nop := func() {}
	for _, n := range slices.Sorted(maps.Keys(notWithAPI)) {
		if set[n] {
			return external.Options{}, nop, fmt.Errorf("--%s does not go with --api: %s", n, notWithAPI[n])
		}
	}
	switch {
	case len(f.hosts) == 0 && *f.hostsFromAPI == "" && *f.faultSource != external.FaultsSimulator.String():
		// (a Java simulator's VMs are rows of its own database: no source to give, see NoDomains)
		return external.Options{}, nop, errors.New("give the hosts whose domains to read: --host NAME=URI (repeatable) or --hosts-from-api TEMPLATE")
	case len(f.hosts) > 0 && *f.hostsFromAPI != "":
		return external.Options{}, nop, errors.New("--host and --hosts-from-api do not go together")
	}
	src, err := external.ParseFaultSource(*f.faultSource)
	if err != nil {
		return external.Options{}, nop, fmt.Errorf("--faults: %v", err)
	}
	if src == external.FaultsSimulator {
		for _, n := range injectOnly {
			if set[n] {
				return external.Options{}, nop, fmt.Errorf("--%s does not go with --faults simulator: the faults go through configureSimulator, not csconform inject", n)
			}
		}
	}
	creds, err := auditCredentials(*f.apiKey, *f.secretKey, *f.keysFile)
	if err != nil {
		return external.Options{}, nop, err
	}
	eo := external.Options{
		API: cloudclient.Options{URL: *f.api, APIKey: creds[0], SecretKey: creds[1], Zone: *f.zone, ServiceOffering: *f.offering,
			Template: *f.template, NetworkOffering: *f.netOffering, Insecure: *f.insecure},
		Timeout: *f.timeout, Poll: *f.poll, HostMap: f.mapHost, DomainPrefix: *f.domainPrefix,
		Ctx: ctx, Log: stderr, Faults: src,
	}
	for _, h := range f.hosts {
		h.Run = *f.labelRun
		eo.Hosts = append(eo.Hosts, external.HostSource(h))
	}
	if tmpl := *f.hostsFromAPI; tmpl != "" {
		eo.HostsFor = external.HostsFromAPI(tmpl, *f.labelRun)
	}
	closer := nop
	if src == external.FaultsInject && (len(f.allowHosts) > 0 || *f.yes || *f.local) {
		var ex inject.Executor = inject.SSH{User: *f.sshUser, Options: f.sshOpts, Timeout: 10 * time.Second}
		if *f.local {
			ex = inject.Local{}
		}
		in := &external.Inject{Exec: ex, Yes: *f.yes, Out: stderr, Targets: f.sshTargets, MgmtPort: *f.mgmtPort,
			Policy: inject.Policy{AllowHosts: f.allowHosts, AllowVMs: f.allowVMs, MaxTargets: *f.maxTargets, AllowProxyCommand: *f.allowProxyCommand}}
		eo.Inject = in
		closer = func() { in.Close() }
		// the log is opened only when a fault is about to need it (a run without faults writes none)
		logFile := *f.auditLog
		in.OpenLog = func() (*inject.Log, error) { return inject.OpenLog(logFile) }
	}
	return eo, closer, nil
}

// reproExternal runs one scenario against the external CloudStack.
func reproExternal(ctx context.Context, f *extFlags, set map[string]bool, sc *harness.Scenario, stderr io.Writer) (*harness.Result, error) {
	eo, closeLog, err := f.options(ctx, set, stderr)
	if err != nil {
		return nil, err
	}
	defer closeLog()
	return external.Repro(sc, eo, *f.expect)
}

// reproExternalCmd is csconform repro NAME|FILE --api URL ...: exit 0 nothing found, 1 a violation or
// a history that is not linearizable, 2 bad input, a refused scenario or something the cleanup left,
// 4 an outcome that differs from --expect's.
func reproExternalCmd(f *extFlags, set map[string]bool, name string, asJSON bool, historyFile string, stdout, stderr io.Writer) int {
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform repro:", err); return 2 }
	if name == "all" {
		return fail(errors.New("against an external CloudStack, name one scenario (not all)"))
	}
	sc, err := conformance.Find(name)
	if err != nil {
		return fail(err)
	}
	ctx, stop := reproContext()
	defer stop()
	r, err := reproExternal(ctx, f, set, sc, stderr)
	if err != nil {
		return fail(err)
	}
	if historyFile != "" {
		if err := writeHistory(historyFile, r); err != nil {
			return fail(err)
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reproDocument([]*harness.Result{r})); err != nil {
			return fail(err)
		}
	} else {
		r.WriteText(stdout, r.Started)
		fmt.Fprintln(stdout, verdict.Summary([]*harness.Result{r}))
	}
	if len(r.Leftovers) > 0 {
		fmt.Fprintf(stderr, "csconform repro: the cleanup left %d thing(s) of run %s behind (listed above): remove them by hand\n", len(r.Leftovers), r.Run)
		return 2
	}
	return reproStatus([]*harness.Result{r}, false)
}
