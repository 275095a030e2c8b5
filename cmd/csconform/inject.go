package main

// csconform inject: one time-boxed fault on allowlisted staging hosts, a dry run unless --yes.

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/csconform/csconform/faults/inject"
	"github.com/csconform/csconform/harness/audit"
	"github.com/spf13/pflag"
)

// injectLong is inject's help text: what it does, the faults, the safety rules and the healing.
func injectLong() string {
	var b strings.Builder
	b.WriteString(`Applies one fault to staging CloudStack hosts over ssh (or here, with --local). Without --yes it is a
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
Safety: a target is touched only if the allowlist names it, by a name pattern (--allow-host,
--allow-vm, --allow-network) or by a CloudStack tag (--allow-tag, --allow-host-tag); a domain's host
must be allowed too, and so must every step's host (the database host included). A target allowed by
neither is refused, with the flag that would allow it. Over ssh, the host ssh really connects to
(ssh -G with --ssh-user and --ssh-opt: an alias's HostName) must be allowed as well as the name
given, and so must every ProxyJump host; a ProxyCommand is refused without --allow-proxy-command
(its target cannot be checked), and so is a ControlPath without --allow-control-path (a shared
connection's master may be connected to any host); the dry run shows what ssh -G resolved, proxy
and ControlPath included. Host names match case-insensitively. Tags are read from the API (--api; read-only: list*
commands sent as GET, anything else refused before it is sent) when the plan is checked, just before
anything runs; a tag that cannot be read allows nothing.

Healing: a time-boxed fault is undone when --duration is over, at once when a step fails (the failed
step is healed too, it may have half-happened), and on Ctrl-C or SIGTERM. agent-restart, agent-kill
and disconnect also leave a dead man's switch on the host (systemd-run --on-active=DURATION+30s, unit
csconform-heal-ID) that heals it even if csconform is killed or loses the host, cancelled (systemctl
stop csconform-heal-ID.timer) once the host is healed, and kept when its heal failed; disconnect's
rules carry the comment csconform-inject-ID, so healing removes exactly them. crash has nothing to
heal. kill -9 of csconform during a slow-router-boot or backdate leaves the fault: the plan record of
the audit log lists its heal steps, and csconform inject heal --audit-log FILE --allow-host ... (--yes)
runs them for every run of the log that applied a step and never logged its end. The log is trusted
no more than the command line: heal runs a step only if it is one inject makes for the recorded
fault, and checks the targets and hosts against its own allowlist and ssh rules (the allowlist, ssh,
--audit-log, --yes and --dry-run flags apply to heal); one refused run refuses the heal, nothing run.

Exit 0 done (or dry run shown), 1 the fault failed or could not be healed, 2 bad input or refused
(said once, on stderr).`)
	return b.String()
}

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

// injectCmd applies the fault args name (or heals, for heal); fs has the flags given.
func injectCmd(o *injectOpts, args []string, fs *pflag.FlagSet, stdout, stderr io.Writer) int {
	fault, args := args[0], args[1:]
	if n, ok := inject.Renamed[fault]; ok {
		fmt.Fprintf(stderr, "csconform inject: %s is now called %s (the name csconform faults gives it)\n", fault, n)
		fault = n
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "csconform inject: "+format+"\n", a...)
		return 2
	}
	if len(args) > 0 {
		return fail("unexpected argument %q", args[0])
	}
	if o.yes && o.dryRun {
		return fail("--yes and --dry-run contradict each other")
	}
	if err := inject.CheckUser(o.sshUser); err != nil {
		return fail("--ssh-user: %v", err)
	}
	var ex inject.Executor = inject.SSH{User: o.sshUser, Options: o.sshOpts, Timeout: 10 * time.Second}
	if o.local {
		ex = inject.Local{}
	}
	if len(o.allowHosts) == 0 && len(o.allowHostTags) == 0 {
		return fail("--allow-host PATTERN (or --allow-host-tag TAG) is required: nothing outside an explicit allowlist is touched")
	}
	var tags inject.TagSource
	if len(o.allowTags) > 0 || len(o.allowHostTags) > 0 {
		if o.apiURL == "" {
			return fail("--allow-tag and --allow-host-tag need --api URL: the tags are read from CloudStack's API")
		}
		creds, err := auditCredentials(o.apiKey, o.secretKey, o.keysFile)
		if err != nil {
			return fail("%v", err)
		}
		tags = inject.APITags{Client: audit.NewAPIClient(audit.APIOptions{URL: o.apiURL, APIKey: creds[0], SecretKey: creds[1], Timeout: 30 * time.Second, Insecure: o.insecure})}
	} else if o.apiURL != "" {
		return fail("--api is only for reading tags: give --allow-tag or --allow-host-tag")
	}
	pol := inject.Policy{AllowHosts: o.allowHosts, AllowVMs: o.allowVMs, AllowNetworks: o.allowNets,
		AllowTags: o.allowTags, AllowHostTags: o.allowHostTags, Tags: tags, MaxTargets: o.maxTargets,
		AllowProxyCommand: o.allowProxyCommand, AllowControlPath: o.allowControlPath}
	if fault == "heal" {
		return injectHeal(o.logFile, ex, pol, o.yes, fs, stdout, stderr)
	}
	spec := inject.Spec{Fault: fault, Hosts: o.hosts, VM: o.vm, Network: o.network, Duration: o.duration, By: o.by, MgmtPort: o.mgmtPort, ID: o.id}
	if fault == inject.Backdate {
		if len(o.hosts) > 0 {
			return fail("backdate runs on --db-host, not --host")
		}
		if o.dbHost != "" {
			spec.Hosts = []string{o.dbHost}
		}
	}
	plan, err := inject.Build(spec)
	if err != nil {
		return fail("%v", err)
	}
	log, err := inject.OpenLog(o.logFile)
	if err != nil {
		return fail("%v", err)
	}
	defer log.Close()
	in := &inject.Injector{Exec: ex, Log: log, Out: stdout, Yes: o.yes, Policy: pol}
	ctx, stop := reproContext() // Ctrl-C and SIGTERM cancel: the fault is healed at once
	defer stop()
	if err := in.Run(ctx, plan); err != nil {
		fmt.Fprintln(stderr, "csconform inject:", err)
		if strings.HasPrefix(err.Error(), "refused") {
			return 2
		}
		return 1
	}
	fmt.Fprintf(stdout, "logged to %s\n", o.logFile)
	return 0
}

// injectHeal undoes what killed runs left, from the audit log's plan records. The executor flags,
// the allowlist, --audit-log and --yes apply: the log is a file anyone who can write it can edit, so
// its steps run only if they are what inject makes for the recorded fault, on targets this command
// line allows, with inject's ssh rules.
func injectHeal(logFile string, ex inject.Executor, pol inject.Policy, yes bool, fs *pflag.FlagSet, stdout, stderr io.Writer) int {
	var stray []string
	fs.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "audit-log", "yes", "dry-run", "ssh-user", "ssh-opt", "local", "allow-host", "allow-host-tag", "allow-vm", "allow-tag",
			"allow-network", "max-targets", "api", "api-key", "secret-key", "api-keys-file", "insecure", "allow-proxy-command", "allow-control-path":
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
	in := &inject.Injector{Exec: ex, Log: log, Out: stdout, Yes: yes, Policy: pol}
	ctx, stop := reproContext()
	defer stop()
	if err := in.Heal(ctx, runs); err != nil {
		fmt.Fprintln(stderr, "csconform inject heal:", err)
		if strings.HasPrefix(err.Error(), "refused") {
			return 2
		}
		return 1
	}
	return 0
}
