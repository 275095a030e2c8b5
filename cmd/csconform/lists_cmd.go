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
