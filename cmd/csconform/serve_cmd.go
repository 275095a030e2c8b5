package main

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csconform/csconform/drivers/libvirt"
	"github.com/csconform/csconform/impl"
)

// serverOpts are server's flags.
type serverOpts struct {
	listen, controlAddr, tokenFile, id string
	profile, defects                   string
	overrides                          configFlags
	stateFile, historyFile             string
	verbose, controlAny                bool
	apiAddr, apiKey, secretKey         string
	keysFile                           string
	agentKeyFile                       string
}

func serverFlags(fs *pflag.FlagSet, o *serverOpts) {
	o.overrides = configFlags{}
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8250", "where agents connect (`ADDR`)")
	fs.StringVar(&o.controlAddr, "control", "127.0.0.1:8096", "the control endpoint's `ADDR`, JSON over HTTP (loopback only, else refused unless --control-any-address: it drives everything the server does); GET / lists it. Every request needs the header \"Authorization: Bearer TOKEN\" (else 401), the token being $CSCONFORM_CONTROL_TOKEN; else the one in --control-token-file; else a generated one, written to a new 0600 file (--control-token-file, or one in the temporary directory, removed when the server stops) whose path is printed. The token is never printed or logged")
	fs.BoolVar(&o.controlAny, "control-any-address", false, "let --control listen on an address other than loopback (0.0.0.0, a host's address or name): anyone who reaches it and has the token drives the server")
	fs.StringVar(&o.tokenFile, "control-token-file", "", "where the control token is read from, or written to when generated (`FILE`; at most 4 KiB)")
	fs.StringVar(&o.agentKeyFile, "agent-key-file", "", "the agent key's `FILE`: the server takes an agent's StartupCommand only with the key, $CSCONFORM_AGENT_KEY; else the one in FILE; else a generated one, written to a new 0600 file (FILE, or one in the temporary directory) whose path is printed (\"agent key in FILE\"; at most 4 KiB). A connection with a wrong or no key is refused with a WARN line. Never printed or logged")
	fs.StringVar(&o.id, "id", "ms1", "management server id `MSID`")
	fs.StringVar(&o.profile, "profile", impl.CloudStack422, "the profile `P`: cloudstack-4.22 or fixed")
	fs.StringVar(&o.defects, "defects", "", "switch on exactly the defects in `LIST` instead (D1,D2a,...; none)")
	fs.Var(o.overrides, "config", "a configuration override, repeatable (csconform config lists the keys)")
	fs.StringVar(&o.stateFile, "state", "", "keep the database in `FILE`, as CloudStack keeps it in MySQL: loaded at start when FILE exists, and every committed write is on disk (FILE.tmp, fsync, rename) before the write returns, so a server killed at any moment and started again with the same FILE and --id finds every record (its in-flight jobs are then cleaned up at startup, as CloudStack does); a write FILE does not take is answered 530, never acknowledged from memory. FILE is capped at 256 MiB (well over 100,000 VMs with their NICs, volumes and jobs) and FILE.log at 768 MiB: a longer one is refused at start, and the server writes none (past FILE's cap the log goes on until its own, then writes are refused). Default: in memory, lost at exit")
	fs.StringVar(&o.historyFile, "history", "", "append every event as JSON lines to `FILE` (created 0600)")
	fs.BoolVar(&o.verbose, "verbose", false, "log DEBUG lines too (default: INFO and up, and every state change)")
	fs.StringVar(&o.apiAddr, "api", "", "also serve CloudStack's API (signed requests, as cloudstack-go sends them) at http://`ADDR`/client/api; off by default")
	fs.StringVar(&o.apiKey, "api-key", "", "the API's `KEY`; else $CSCONFORM_API_KEY; else the pair in --api-keys-file; else a generated pair, written to a new 0600 file (--api-keys-file, or one in the temporary directory, removed when the server stops) whose path is printed")
	fs.StringVar(&o.secretKey, "secret-key", "", "the API's `SECRET` key, with --api-key (else $CSCONFORM_SECRET_KEY); at least 16 characters, never printed or logged. On the command line every local user sees it (/proc): the server warns; prefer $CSCONFORM_SECRET_KEY or --api-keys-file")
	fs.StringVar(&o.keysFile, "api-keys-file", "", "the key pair as KEY=VALUE lines in `FILE` (at most 4 KiB)")
}

func newServerCmd(e *cliEnv) *cobra.Command {
	o := &serverOpts{}
	c := &cobra.Command{
		Use:   "server [flags]",
		Short: "run the management server over TCP",
		Long: `Runs the reference management server over TCP, for agents started with csconform agent.

It prints "agents listening on ADDR" (after "agent key in FILE" when it generated the agent key),
"control listening on http://ADDR" (after "control token in FILE" when it generated the token) and,
with --api, "api listening on http://ADDR/client/api" once ready. Agents present the agent key in
their StartupCommand (csconform agent: $CSCONFORM_AGENT_KEY or --agent-key-file); a connection
without it is refused and logged (WARN). SIGINT/SIGTERM: the server stops serving the API and the
control endpoint (requests in flight get 2 s), then writes nothing more to its --state FILE: every
write answered with success is in it, and what the stopping tasks do is not (as after a kill). A
write to FILE that fails (a full disk, an I/O error, a cap) makes every request answer 530 "DB
Exception on: the database cannot be written ..." until the whole database is written again (tried
once a second). Exit 2 on bad flags or an unreadable or unwritable --state FILE.`,
		Example: "  csconform server --state ms.db --history ms.jsonl --config vm.destroy.forcestop=true",
		Args:    noArgs,
		Run: func(_ *cobra.Command, _ []string) {
			*e.code = serverCmd(o, e.stdout, e.stderr)
		},
	}
	serverFlags(c.Flags(), o)
	return c
}

// agentOpts are agent's flags.
type agentOpts struct {
	hostID, server, hvName, faultsAddr string
	profile, defects                   string
	hf                                 hvFlags
	historyFile                        string
	verbose                            bool
	keyFile, tokenFile                 string
}

func agentFlags(fs *pflag.FlagSet, o *agentOpts) {
	fs.StringVar(&o.hostID, "host", "", "the host `ID` this agent serves")
	fs.StringVar(&o.server, "server", "", "the management server's --listen `ADDR`")
	fs.StringVar(&o.hvName, "hypervisor", "sim", "where domains run (`NAME`; see above)")
	fs.StringVar(&o.profile, "profile", impl.CloudStack422, "the profile `P` of the agent's switches (C6), as the server's: cloudstack-4.22 or fixed")
	fs.StringVar(&o.defects, "defects", "", "switch on exactly the defects in `LIST` instead, as the server's")
	fs.StringVar(&o.keyFile, "agent-key-file", "", "the server's agent key is $CSCONFORM_AGENT_KEY; else the one in `FILE` (required: the server refuses an agent without it)")
	fs.StringVar(&o.faultsAddr, "faults", "", "serve the agent's fault hook (POST /delayNextOutOfBand?d=DURATION) on `ADDR`, only with the header \"Authorization: Bearer TOKEN\" (else 401), the token as the server's control token: $CSCONFORM_CONTROL_TOKEN; else the one in --control-token-file; else a generated one, written to a new 0600 file whose path is printed")
	fs.StringVar(&o.tokenFile, "control-token-file", "", "with --faults: where the control token is read from, or written to when generated (`FILE`)")
	// as the libvirt driver names and labels domains, so csconform cleanup finds them
	fs.StringVar(&o.hf.run, "run", "", "libvirt: the run `ID` the domains belong to (default $CSCONFORM_RUN; required): a restarted agent with the same --run and --host finds its running domains again")
	fs.StringVar(&o.hf.runDir, "run-dir", "", "libvirt: base directory `DIR` of run files: volumes, serial logs (default $CSCONFORM_RUN_DIR or /var/lib/csconform); libvirtd opens them by path, so in a container mount it at the same path as on the host")
	fs.StringVar(&o.hf.guestDir, "guest-dir", "", "libvirt: the guest from ci/build-guest.sh, in `DIR` (default $CSCONFORM_GUEST_DIR or /var/cache/csconform/guest), also opened by libvirtd by path")
	fs.StringVar(&o.hf.virtType, "virt-type", "", "libvirt: `T`, kvm or qemu (TCG); default: detected (a KVM probe, cached in --run-dir)")
	fs.DurationVar(&o.hf.routerBoot, "router-boot", libvirt.DefaultBootDelay(impl.DomainSpec{Type: "DomainRouter"}), "libvirt: a router's boot delay `D` after reaching userspace, as CloudStack's")
	fs.StringVar(&o.historyFile, "history", "", "append every event as JSON lines to `FILE`")
	fs.BoolVar(&o.verbose, "verbose", false, "log DEBUG lines too (default: INFO and up, and every state change)")
}

func newAgentCmd(e *cliEnv) *cobra.Command {
	o := &agentOpts{}
	c := &cobra.Command{
		Use:   "agent --host ID --server ADDR [flags]",
		Short: "run one host's agent over TCP",
		Long: `Runs one host's agent, connected to csconform server's --listen address. --hypervisor is where its
domains run:` + hypervisorDocs() + `

It presents the server's agent key ($CSCONFORM_AGENT_KEY, else --agent-key-file) in its
StartupCommand: the server refuses an agent without it. --faults serves the agent's fault hooks
(POST /delayNextOutOfBand?d=DURATION; with --hypervisor libvirt also POST /routerBoot?d=DURATION)
only with the header "Authorization: Bearer TOKEN", the control token.

SIGINT/SIGTERM: the agent sends a ShutdownCommand and exits. Exit 2 on bad flags, no agent key or an
unreachable management server.`,
		Example: "  csconform agent --host h1 --server 127.0.0.1:8250 --hypervisor libvirt --run r1",
		Args:    noArgs,
		Run: func(c *cobra.Command, _ []string) {
			if !c.Flags().Changed("run") {
				o.hf.run = os.Getenv("CSCONFORM_RUN")
			}
			*e.code = agentCmd(o, e.stdout, e.stderr)
		},
	}
	agentFlags(c.Flags(), o)
	return c
}

// hypervisorOpts are hypervisor's flags.
type hypervisorOpts struct{ hostID, socket, listen, tokenFile string }

func hypervisorFlags(fs *pflag.FlagSet, o *hypervisorOpts) {
	fs.StringVar(&o.hostID, "host", "", "the host `ID` whose domains these are (required)")
	fs.StringVar(&o.socket, "socket", "", "the unix socket `PATH` agents use (--hypervisor unix:PATH; required)")
	fs.StringVar(&o.listen, "listen", "", "serve the same HTTP API on TCP at `ADDR`, for the harness; everything but GET /domains only with the header \"Authorization: Bearer TOKEN\" (else 401), the token as the server's control token: $CSCONFORM_CONTROL_TOKEN; else the one in --control-token-file; else a generated one, written to a new 0600 file whose path is printed")
	fs.StringVar(&o.tokenFile, "control-token-file", "", "with --listen: where the control token is read from, or written to when generated (`FILE`)")
}

func newHypervisorCmd(e *cliEnv) *cobra.Command {
	o := &hypervisorOpts{}
	c := &cobra.Command{
		Use:   "hypervisor --host ID --socket PATH [--listen ADDR]",
		Short: "one host's simulated domains, for agents in containers",
		Long: `Runs the simulated domains of one host (no libvirt: FAKE domains in this process, in real time).
Agents use it with csconform agent --hypervisor unix:PATH. --listen serves the same HTTP API on TCP
for the harness: GET /domains (the truth: running domains, IPs, disks), and the host's faults:
POST /crash?name=[&detail=FAILED|CRASHED] (the domain's QEMU dies or its guest panics),
POST /guestShutdown?name= (the guest powers itself off) and POST /routerBoot?d=DURATION (router
guests created from now on take d to say ready; 0 restores the default, 1 s). On --listen every
request but GET /domains needs the header "Authorization: Bearer TOKEN" (else 401); the token is
$CSCONFORM_CONTROL_TOKEN, else the one in --control-token-file, else a generated one whose file is
printed ("control token in FILE"). The unix socket needs none: only its owner can connect.`,
		Args: noArgs,
		Run: func(_ *cobra.Command, _ []string) {
			*e.code = hypervisorCmd(o, e.stdout, e.stderr)
		},
	}
	hypervisorFlags(c.Flags(), o)
	return c
}
