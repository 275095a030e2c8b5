package main

// csconform inject: one time-boxed fault on allowlisted staging hosts, a dry run unless --yes.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/csconform/csconform/faults/inject"
	"github.com/csconform/csconform/harness/audit"
)

func injectUsage() string {
	var b strings.Builder
	b.WriteString(`Usage:
  csconform inject FAULT --host H [--host H ...] [fault flags] --allow-host PATTERN [--allow-vm PATTERN]
                   [--allow-network PATTERN] [--max-targets N] [--audit-log FILE] [--yes]
  csconform inject FAULT ... --api URL [credentials] --allow-tag KEY=VALUE [--allow-host-tag TAG] ...
  csconform inject heal [--audit-log FILE] [--yes] [executor flags]

Applies one fault to staging CloudStack hosts over ssh (or here, with --local). Without --yes it is a
DRY RUN (--dry-run says so explicitly): it prints every command it would run, in order and quoted as
it will run, with the healing, logs the plan, and changes nothing. The faults have the names
csconform faults gives the scenario faults (the old names crash-domain, agent-stop, cut-link,
delay-router-boot and backdate-network are still accepted).

Faults:
`)
	for _, k := range inject.Kinds {
		lasts := "instantaneous"
		switch {
		case k.Lasts && k.Default > 0:
			lasts = "time-boxed: --duration, default " + k.Default.String()
		case k.Lasts:
			lasts = "time-boxed: needs --duration"
		}
		fmt.Fprintf(&b, "  %-18s %s (%s)\n  %-18s   %s\n  %-18s   heal: %s\n", k.Name, k.Targets, lasts, "", k.Doc, "", k.Heal)
	}
	b.WriteString(`
Fault flags:
  --host H             a target host: its bare ssh name or address (no user@, port, options or
                       spaces; the user is --ssh-user); repeatable where the fault allows several
  --vm DOMAIN          the domain (crash: any instance, i-2-5-VM; slow-router-boot: r-N-VM)
  --duration D         how long a time-boxed fault holds (e.g. 90s, 5m)
  --mgmt-port P        disconnect: the management server's agent port (default 8250)
  --db-host M          backdate: the host with CloudStack's MySQL (mysql client, database cloud)
  --network UUID       backdate: the network's uuid
  --by D               backdate: how far back (e.g. 25h)

Safety: a target is touched only if the allowlist names it, by a name pattern or by a CloudStack tag;
a domain's host must be allowed too, and so must every step's host (the database host included). A
target allowed by neither is refused, with the flag that would allow it. Over ssh, the host ssh really
connects to (ssh -G with --ssh-user and --ssh-opt: an alias's HostName) must be allowed as well as the
name given. Host names match case-insensitively.
  --allow-host PATTERN     hosts that may be touched (shell pattern: stage-kvm*); repeatable. This or
                           --allow-host-tag is required
  --allow-host-tag TAG     hosts whose CloudStack host tags (listHosts hosttags; the host found by its
                           name or address) include TAG; repeatable; needs --api
  --allow-vm PATTERN       domains that may be crashed or suspended (i-2-*-VM, r-*); repeatable
  --allow-tag KEY=VALUE    instances carrying this CloudStack resource tag (createTags; the tags
                           listVirtualMachines gives, the instance found by its instance name, the
                           domain's name); repeatable; needs --api. listVirtualMachines does not
                           list routers and system VMs: --allow-vm allows them
  --allow-network PATTERN  network uuids that may be backdated; repeatable
  --max-targets N          blast radius: refuse a fault on more than N hosts, domains or networks
                           (default 1)
  --yes                    really do it; without it, a dry run
  --dry-run                only show the plan (the default; refused together with --yes)
  --audit-log FILE         append-only log, one JSON line per action (plan, refuse, dry-run, apply,
                           heal, done) with its time, target, command and result
                           (default csconform-inject.log; created 0600, never truncated)

Healing: a time-boxed fault is undone when --duration is over, at once when a step fails (the failed
step is healed too, it may have half-happened), and on Ctrl-C or SIGTERM. agent-restart, agent-kill
and disconnect also
leave a dead man's switch on the host (systemd-run --on-active=DURATION+30s, unit csconform-heal-ID)
that heals it even if csconform is killed or loses the host, cancelled (systemctl stop
csconform-heal-ID.timer) once the host is healed, and kept when its heal failed; disconnect's rules
carry the comment csconform-inject-ID, so healing removes exactly them. crash has nothing to heal.
kill -9 of csconform during a slow-router-boot or backdate leaves the fault: the plan record of the
audit log lists its heal steps, and csconform inject heal --audit-log FILE (--yes) runs them for every
run of the log that applied a step and never logged its end.

Tags (read-only: list* commands sent as GET, anything else refused before it is sent; read when the
plan is checked, just before anything runs; a tag that cannot be read allows nothing):
  --api URL            CloudStack's API, e.g. http://mgmt:8080/client/api
  --api-key KEY, --secret-key SECRET
                       else $CSCONFORM_API_KEY and $CSCONFORM_SECRET_KEY, else --api-keys-file FILE;
                       the secret is never printed or logged
  --insecure           do not verify the API's TLS certificate

Executor:
  --ssh-user U         ssh user (default root); keys only (BatchMode), no password prompt
  --ssh-opt OPT        an extra ssh option, repeatable (e.g. --ssh-opt=-i --ssh-opt=/path/key)
  --local              run the commands on this machine instead of over ssh (one-machine staging)
  --id ID              tag of this run's rules and heal units (default from the clock)

Exit status: 0 done (or dry run shown), 1 the fault failed or could not be healed, 2 bad input or refused
(said once, on stderr).
`)
	return b.String()
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// tagFlags collects repeated --allow-tag KEY=VALUE.
type tagFlags []inject.Tag

func (t *tagFlags) String() string { return "" }
func (t *tagFlags) Type() string   { return "KEY=VALUE" }
func (t *tagFlags) Set(v string) error {
	tag, err := inject.ParseTag(v)
	if err != nil {
		return err
	}
	*t = append(*t, tag)
	return nil
}

func injectCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, injectUsage())
		return 0
	}
	fault, args := args[0], args[1:]
	if n, ok := inject.Renamed[fault]; ok {
		fmt.Fprintf(stderr, "csconform inject: %s is now called %s (the name csconform faults gives it)\n", fault, n)
		fault = n
	}
	fs := flag.NewFlagSet("inject", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	var hosts, allowHosts, allowVMs, allowNets, allowHostTags, sshOpts listFlag
	var allowTags tagFlags
	fs.Var(&hosts, "host", "")
	vm := fs.String("vm", "", "")
	duration := fs.Duration("duration", 0, "")
	mgmtPort := fs.Int("mgmt-port", 8250, "")
	dbHost := fs.String("db-host", "", "")
	network := fs.String("network", "", "")
	by := fs.Duration("by", 0, "")
	fs.Var(&allowHosts, "allow-host", "")
	fs.Var(&allowVMs, "allow-vm", "")
	fs.Var(&allowNets, "allow-network", "")
	fs.Var(&allowTags, "allow-tag", "")
	fs.Var(&allowHostTags, "allow-host-tag", "")
	apiURL := fs.String("api", "", "")
	apiKey := fs.String("api-key", "", "")
	secretKey := fs.String("secret-key", "", "")
	keysFile := fs.String("api-keys-file", "", "")
	insecure := fs.Bool("insecure", false, "")
	maxTargets := fs.Int("max-targets", 1, "")
	yes := fs.Bool("yes", false, "")
	dryRun := fs.Bool("dry-run", false, "")
	logFile := fs.String("audit-log", "csconform-inject.log", "")
	sshUser := fs.String("ssh-user", "root", "")
	fs.Var(&sshOpts, "ssh-opt", "")
	local := fs.Bool("local", false, "")
	id := fs.String("id", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, injectUsage())
			return 0
		}
		fmt.Fprintln(stderr, "csconform inject: see csconform inject -h")
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "csconform inject: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	if *yes && *dryRun {
		return fail("--yes and --dry-run contradict each other")
	}
	if err := inject.CheckUser(*sshUser); err != nil {
		return fail("--ssh-user: %v", err)
	}
	var ex inject.Executor = inject.SSH{User: *sshUser, Options: sshOpts, Timeout: 10 * time.Second}
	if *local {
		ex = inject.Local{}
	}
	if fault == "heal" {
		return injectHeal(*logFile, ex, *yes, fs, stdout, stderr)
	}
	if len(allowHosts) == 0 && len(allowHostTags) == 0 {
		return fail("--allow-host PATTERN (or --allow-host-tag TAG) is required: nothing outside an explicit allowlist is touched")
	}
	var tags inject.TagSource
	if len(allowTags) > 0 || len(allowHostTags) > 0 {
		if *apiURL == "" {
			return fail("--allow-tag and --allow-host-tag need --api URL: the tags are read from CloudStack's API")
		}
		creds, err := auditCredentials(*apiKey, *secretKey, *keysFile)
		if err != nil {
			return fail("%v", err)
		}
		tags = inject.APITags{Client: audit.NewAPIClient(audit.APIOptions{URL: *apiURL, APIKey: creds[0], SecretKey: creds[1], Timeout: 30 * time.Second, Insecure: *insecure})}
	} else if *apiURL != "" {
		return fail("--api is only for reading tags: give --allow-tag or --allow-host-tag")
	}
	spec := inject.Spec{Fault: fault, Hosts: hosts, VM: *vm, Network: *network, Duration: *duration, By: *by, MgmtPort: *mgmtPort, ID: *id}
	if fault == inject.Backdate {
		if len(hosts) > 0 {
			return fail("backdate runs on --db-host, not --host")
		}
		if *dbHost != "" {
			spec.Hosts = []string{*dbHost}
		}
	}
	plan, err := inject.Build(spec)
	if err != nil {
		return fail("%v", err)
	}
	log, err := inject.OpenLog(*logFile)
	if err != nil {
		return fail("%v", err)
	}
	defer log.Close()
	in := &inject.Injector{Exec: ex, Log: log, Out: stdout, Yes: *yes,
		Policy: inject.Policy{AllowHosts: allowHosts, AllowVMs: allowVMs, AllowNetworks: allowNets,
			AllowTags: allowTags, AllowHostTags: allowHostTags, Tags: tags, MaxTargets: *maxTargets}}
	ctx, stop := reproContext() // Ctrl-C and SIGTERM cancel: the fault is healed at once
	defer stop()
	if err := in.Run(ctx, plan); err != nil {
		fmt.Fprintln(stderr, "csconform inject:", err)
		if strings.HasPrefix(err.Error(), "refused") {
			return 2
		}
		return 1
	}
	fmt.Fprintf(stdout, "logged to %s\n", *logFile)
	return 0
}

// injectHeal undoes what killed runs left, from the audit log's plan records. Only the executor
// flags, --audit-log and --yes apply: the steps are the ones the log recorded, on the hosts the
// allowlist let through when the fault was applied.
func injectHeal(logFile string, ex inject.Executor, yes bool, fs *flag.FlagSet, stdout, stderr io.Writer) int {
	var stray []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "audit-log", "yes", "dry-run", "ssh-user", "ssh-opt", "local":
		default:
			stray = append(stray, "--"+f.Name)
		}
	})
	if len(stray) > 0 {
		fmt.Fprintf(stderr, "csconform inject heal: %s do not apply: the heal steps come from the audit log\n", strings.Join(stray, ", "))
		return 2
	}
	runs, err := inject.ReadUnhealedFile(logFile)
	if err != nil {
		fmt.Fprintln(stderr, "csconform inject heal:", err)
		return 2
	}
	if len(runs) == 0 {
		fmt.Fprintf(stdout, "%s: every run that applied a fault logged its end: nothing to heal\n", logFile)
		return 0
	}
	log, err := inject.OpenLog(logFile)
	if err != nil {
		fmt.Fprintln(stderr, "csconform inject heal:", err)
		return 2
	}
	defer log.Close()
	if !yes {
		fmt.Fprintf(stdout, "DRY RUN (add --yes to heal): %d unhealed run(s) in %s\n", len(runs), logFile)
		log = nil // a dry run of a heal changes nothing, the log included
	}
	in := &inject.Injector{Exec: ex, Log: log, Out: stdout, Yes: yes}
	ctx, stop := reproContext()
	defer stop()
	if err := in.Heal(ctx, runs); err != nil {
		fmt.Fprintln(stderr, "csconform inject heal:", err)
		return 1
	}
	return 0
}
