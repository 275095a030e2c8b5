package main

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// injectOpts are inject's flags.
type injectOpts struct {
	hosts                                          []string
	vm                                             string
	duration                                       time.Duration
	mgmtPort                                       int
	dbHost, network                                string
	by                                             time.Duration
	allowHosts, allowVMs, allowNets, allowHostTags []string
	allowTags                                      tagFlags
	apiURL, apiKey, secretKey, keysFile            string
	insecure                                       bool
	maxTargets                                     int
	yes, dryRun                                    bool
	logFile, sshUser                               string
	sshOpts                                        []string
	local, allowProxyCommand, allowControlPath     bool
	id                                             string
}

func injectFlags(fs *pflag.FlagSet, o *injectOpts) {
	// the fault
	fs.StringArrayVar(&o.hosts, "host", nil, "a target host `H`: its bare ssh name or address (no user@, port, options or spaces; the user is --ssh-user); repeatable where the fault allows several")
	fs.StringVar(&o.vm, "vm", "", "the `DOMAIN` (crash: any instance, i-2-5-VM; slow-router-boot: r-N-VM)")
	fs.DurationVar(&o.duration, "duration", 0, "how long (`D`) a time-boxed fault holds (e.g. 90s, 5m)")
	fs.IntVar(&o.mgmtPort, "mgmt-port", 8250, "disconnect: the management server's agent `PORT`")
	fs.StringVar(&o.dbHost, "db-host", "", "backdate: the host `M` with CloudStack's MySQL (mysql client, database cloud)")
	fs.StringVar(&o.network, "network", "", "backdate: the network's `UUID`")
	fs.DurationVar(&o.by, "by", 0, "backdate: how far back (`D`, e.g. 25h)")
	// the allowlist
	fs.StringArrayVar(&o.allowHosts, "allow-host", nil, "hosts that may be touched (shell `PATTERN`: stage-kvm*); repeatable. This or --allow-host-tag is required")
	fs.StringArrayVar(&o.allowHostTags, "allow-host-tag", nil, "hosts whose CloudStack host tags (listHosts hosttags; the host found by its name or address) include `TAG`; repeatable; needs --api")
	fs.StringArrayVar(&o.allowVMs, "allow-vm", nil, "domains that may be crashed or suspended (shell `PATTERN`: i-2-*-VM, r-*); repeatable")
	fs.Var(&o.allowTags, "allow-tag", "instances carrying this CloudStack resource tag (createTags; the tags listVirtualMachines gives, the instance found by its instance name, the domain's name); repeatable; needs --api. listVirtualMachines does not list routers and system VMs: --allow-vm allows them")
	fs.StringArrayVar(&o.allowNets, "allow-network", nil, "network uuids that may be backdated (shell `PATTERN`); repeatable")
	fs.IntVar(&o.maxTargets, "max-targets", 1, "blast radius: refuse a fault on more than `N` hosts, domains or networks")
	fs.BoolVar(&o.yes, "yes", false, "really do it; without it, a dry run")
	fs.BoolVar(&o.dryRun, "dry-run", false, "only show the plan (the default; refused together with --yes)")
	fs.StringVar(&o.logFile, "audit-log", "csconform-inject.log", "append-only log `FILE`, one JSON line per action (plan, refuse, dry-run, apply, heal, done) with its time, target, command and result (created 0600, never truncated)")
	// tags, read from CloudStack's API
	fs.StringVar(&o.apiURL, "api", "", "CloudStack's API at `URL`, e.g. http://mgmt:8080/client/api, to read the tags")
	fs.StringVar(&o.apiKey, "api-key", "", "the API `KEY` (else $CSCONFORM_API_KEY, else --api-keys-file)")
	fs.StringVar(&o.secretKey, "secret-key", "", "the `SECRET` key (else $CSCONFORM_SECRET_KEY, else --api-keys-file); never printed or logged")
	fs.StringVar(&o.keysFile, "api-keys-file", "", "the key pair as KEY=VALUE lines in `FILE`")
	fs.BoolVar(&o.insecure, "insecure", false, "do not verify the API's TLS certificate")
	// the executor
	fs.StringVar(&o.sshUser, "ssh-user", "root", "ssh `USER`; keys only (BatchMode), no password prompt")
	fs.StringArrayVar(&o.sshOpts, "ssh-opt", nil, "an extra ssh option `OPT`, repeatable (e.g. --ssh-opt=-i --ssh-opt=/path/key). The allowlist is matched against what ssh -G resolves with them and ~/.ssh/config: the host ssh connects to and every ProxyJump host; the dry run shows it")
	fs.BoolVar(&o.allowProxyCommand, "allow-proxy-command", false, "let ssh connect through a ProxyCommand (from --ssh-opt or ~/.ssh/config), whose target cannot be checked against the allowlist; refused without it")
	fs.BoolVar(&o.allowControlPath, "allow-control-path", false, "let ssh use a shared connection (a ControlPath from --ssh-opt or ~/.ssh/config), whose master may be connected to any host; refused without it")
	fs.BoolVar(&o.local, "local", false, "run the commands on this machine instead of over ssh (one-machine staging)")
	fs.StringVar(&o.id, "id", "", "tag `ID` of this run's rules and heal units (default from the clock)")
}

func newInjectCmd(e *cliEnv) *cobra.Command {
	o := &injectOpts{}
	c := &cobra.Command{
		Use:   "inject FAULT|heal [flags]",
		Short: "a time-boxed fault on allowlisted staging hosts (a dry run unless --yes)",
		Long:  injectLong(),
		Example: `  csconform inject agent-restart --host stage-kvm1 --allow-host 'stage-kvm*' --duration 2m
  csconform inject crash --vm i-2-5-VM --host stage-kvm1 --allow-host 'stage-*' --allow-vm 'i-2-*' --yes
  csconform inject disconnect --host stage-kvm1 --api http://mgmt:8080/client/api --allow-host-tag staging
  csconform inject heal --audit-log csconform-inject.log --allow-host 'stage-kvm*' --yes`,
		Run: func(c *cobra.Command, args []string) {
			if len(args) == 0 {
				c.Help() // as before: inject alone shows what it does
				return
			}
			*e.code = injectCmd(o, args, c.Flags(), e.stdout, e.stderr)
		},
	}
	injectFlags(c.Flags(), o)
	return c
}
