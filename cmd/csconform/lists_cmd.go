package main

import (
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// listOpts are the flags of the list commands.
type listOpts struct{ asJSON bool }

func listFlags(fs *pflag.FlagSet, o *listOpts) {
	fs.BoolVar(&o.asJSON, "json", false, "print the list as JSON")
}

// newListCmd is one of the list commands: scenarios, profiles, faults, config.
func newListCmd(e *cliEnv, name, short, long string, list func(asJSON bool, stdout, stderr io.Writer) int) *cobra.Command {
	o := &listOpts{}
	c := &cobra.Command{
		Use:   name + " [--json]",
		Short: short,
		Long:  long,
		Args:  noArgs,
		Run: func(_ *cobra.Command, _ []string) {
			*e.code = list(o.asJSON, e.stdout, e.stderr)
		},
	}
	listFlags(c.Flags(), o)
	return c
}

func newScenariosCmd(e *cliEnv) *cobra.Command {
	c := newListCmd(e, "scenarios", "list the built-in scenarios, or show one's file",
		"Lists the built-in scenarios (conformance/scenarios): name, the report it reproduces, title.",
		listScenarios)
	c.AddCommand(&cobra.Command{
		Use:     "show NAME",
		Short:   "print a built-in scenario's file (a start for your own)",
		Example: "  csconform scenarios show seed-004-forced-destroy > my.yaml; csconform repro my.yaml",
		Args:    exactArgs(1, "name one built-in scenario"),
		Run: func(_ *cobra.Command, args []string) {
			*e.code = showScenario(args[0], e.stdout, e.stderr)
		},
	})
	var hosts int
	var sf scaleFlags
	scale := &cobra.Command{
		Use:   "scale [flags]",
		Short: "print a generated scale scenario: N hosts x 20 VMs over networks of 25, then a quiet day",
		Long: `Prints a generated scale scenario (the clouds csconform bench --scale runs): --hosts hosts with
--vms-per-host VMs each, spread over networks of --vms-per-network, deployed host by host and left to
run until --duration of simulated time has passed (a run of 48 h, the default --max-sim-time, needs a
larger one for its deploys). A start for a scenario of your own cloud's size.`,
		Example: "  csconform scenarios scale --hosts 100 > cloud.yaml; csconform repro cloud.yaml --profile fixed",
		Args:    noArgs,
		Run: func(_ *cobra.Command, _ []string) {
			*e.code = scaleScenarioCmd(hosts, sf, e.stdout, e.stderr)
		},
	}
	scale.Flags().IntVar(&hosts, "hosts", 10, "`N` hosts")
	sf = addScaleFlags(scale.Flags())
	c.AddCommand(scale)
	return c
}

func newProfilesCmd(e *cliEnv) *cobra.Command {
	return newListCmd(e, "profiles", "list the profiles and defect switches",
		"Lists the profiles (--profile) with the defects each switches on, then every defect (--defects).",
		listProfiles)
}

func newFaultsCmd(e *cliEnv) *cobra.Command {
	return newListCmd(e, "faults", "list the faults a scenario can inject",
		"Lists the faults a scenario can inject: name, what it needs, what it does.", listFaults)
}

func newConfigCmd(e *cliEnv) *cobra.Command {
	return newListCmd(e, "config", "list the configuration keys and their defaults",
		"Lists the configuration keys (a scenario's setConfig, csconform server --config): default, unit, range.",
		listConfig)
}
