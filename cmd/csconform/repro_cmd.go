package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csconform/csconform/drivers/container"
	"github.com/csconform/csconform/impl"
)

// reproOpts are repro's flags.
type reproOpts struct {
	profile, defects     string
	seed                 uint64
	driver, uri, domains string
	asJSON               bool
	summary              bool // one line a scenario, the details of those that fail the run
	expectations         bool // gate on the profile's expectations alone
	historyFile          string
	lim                  limitFlags
	ext                  *extFlags
}

func reproFlags(fs *pflag.FlagSet, o *reproOpts) {
	fs.StringVar(&o.profile, "profile", impl.CloudStack422, "the profile `P`: cloudstack-4.22 (all known defects) or fixed (csconform profiles lists them)")
	fs.StringVar(&o.defects, "defects", "", "switch on exactly the defects in `LIST` instead of a profile's (D1,D2a,...; D2 = D2a-D2e; none)")
	fs.Uint64Var(&o.seed, "seed", 0, "the scheduler seed `N` (default: each scenario's own)")
	fs.StringVar(&o.driver, "driver", "sim", driverHelp(drivers))
	fs.StringVar(&o.uri, "uri", "", "the libvirtd `URI` for --driver libvirt (default qemu:///system)")
	fs.StringVar(&o.domains, "domains", container.DomainsAuto, "`D`, for --driver container: auto (real libvirt domains, driven by the agent containers through libvirtd's mounted socket, where libvirtd answers and the guest is built; else simulated), libvirt (or fail) or simulated")
	fs.BoolVar(&o.asJSON, "json", false, "print the results as JSON (schema: docs/cli.md)")
	fs.BoolVar(&o.summary, "summary", false, "one line a scenario (met, UNMET, FOUND, UNDECIDED, clean), the full report only for those that fail the run")
	fs.BoolVar(&o.expectations, "expectations", false, "judge each scenario that has expectations under --profile by them alone: exit 0 when every one met them, its known violations included, so CI can gate on the buggy profile (scenarios without expectations are judged as usual)")
	fs.StringVar(&o.historyFile, "history", "", "write the recorded history as JSON lines to `FILE` (several scenarios: one file each, FILE with the scenario's name before its extension)")
	o.lim = addLimitFlags(fs)
	o.ext = addExternalFlags(fs)
}

func newReproCmd(e *cliEnv) *cobra.Command {
	o := &reproOpts{}
	c := &cobra.Command{
		Use:   "repro NAME|FILE|all [flags]",
		Short: "run scenarios and check the invariants",
		Long: `Runs built-in scenarios (csconform scenarios), a scenario file, or all of them, on the simulator
(or --driver live|libvirt|container) and checks the invariants and linearizability; prints the table and
each violation.

Against an external CloudStack (--api URL; one scenario; nothing is started, no profile, seed or
driver), the run names what it creates csc-<run>-<name> and removes it all on exit, Ctrl-C included;
a step it cannot do from outside (ms-restart, stale-report, setConfig, a primed network, a fault
without host access...) is refused up front. Faults that need a host go through csconform inject,
only with --allow-host (and --allow-vm, --max-targets, --yes, the ssh flags or --local). Exit 2 also
when the cleanup leaves something behind.`,
		Example: `  csconform repro all --profile fixed
  csconform repro all --profile cloudstack-4.22 --expectations --summary
  csconform repro seed-004-forced-destroy --profile cloudstack-4.22 --history h.jsonl
  csconform repro seed-004-forced-destroy --driver libvirt
  csconform repro seed-004-forced-destroy --api http://mgmt:8080/client/api --host kvm1=qemu+ssh://root@kvm1/system`,
		Run: func(c *cobra.Command, args []string) {
			*e.code = repro(o, args, changed(c.Flags()), e.stdout, e.stderr)
		},
	}
	reproFlags(c.Flags(), o)
	return c
}

// changed names the flags given on the command line.
func changed(fs *pflag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
	return set
}
