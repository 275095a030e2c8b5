package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csconform/csconform/drivers/libvirt"
)

// cleanupOpts are cleanup's flags.
type cleanupOpts struct {
	uri, run, dir   string
	all, containers bool
}

func cleanupFlags(fs *pflag.FlagSet, o *cleanupOpts) {
	fs.StringVar(&o.run, "run", "", "only run `ID`'s leftovers (default: every run's, as --all)")
	fs.BoolVar(&o.all, "all", false, "every run's leftovers (the default)")
	fs.StringVar(&o.uri, "uri", libvirt.DefaultURI, "the libvirtd `URI` whose domains to look at; naming it makes an unreachable libvirtd fail the cleanup")
	fs.StringVar(&o.dir, "dir", "", "the base directory `DIR` of the run files (default $CSCONFORM_RUN_DIR or /var/lib/csconform)")
	fs.BoolVar(&o.containers, "containers", false, "kept for old scripts: Docker must answer (it is looked at in any case)")
}

func newCleanupCmd(e *cliEnv) *cobra.Command {
	o := &cleanupOpts{}
	c := &cobra.Command{
		Use:   "cleanup [--run ID | --all] [flags]",
		Short: "remove what any run left (or one run's)",
		Long: `Removes what csconform runs left behind, libvirt and container runs alike (a run killed with kill -9
leaves containers and domains both): Docker containers, networks, volumes and images labelled
org.csconform.run, libvirt domains carrying csconform's metadata label, and run directories marked
.csconform-run. Nothing without those labels is touched. It prints each thing removed, then each
thing that remains, and a summary.

A place that does not answer (no Docker daemon, no libvirtd) is reported as not looked at; it fails
the cleanup only when a flag names it (--containers for Docker, --uri for libvirtd). Exit 2 when
something remains or a named place did not answer.`,
		Args: noArgs,
		Run: func(c *cobra.Command, _ []string) {
			*e.code = cleanup(o, c.Flags().Changed("uri"), e.places, e.stdout, e.stderr)
		},
	}
	cleanupFlags(c.Flags(), o)
	return c
}
