package main

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// checkOpts are check's flags.
type checkOpts struct {
	out               string
	asJSON            bool
	timeout           time.Duration
	maxInput, maxLine string
	settings          []string
	defaultSettings   bool
}

func checkFlags(fs *pflag.FlagSet, o *checkOpts) {
	fs.StringVar(&o.out, "out", "", "write one porcupine HTML per partition that is not linearizable into `DIR`")
	fs.BoolVar(&o.asJSON, "json", false, "print the verdicts as JSON")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "`D`: how long the linearizability checker may take per object (0: no limit); an object it cannot decide in time is UNDECIDED")
	fs.StringVar(&o.maxInput, "max-input", "1GiB", "read at most `N` bytes (KiB, MiB, GiB suffixes)")
	fs.StringVar(&o.maxLine, "max-line", "1MiB", "refuse a line longer than `N` bytes")
	fs.StringArrayVar(&o.settings, "setting", nil, "a setting of the run the transition guards read, `KEY=VALUE` (as for logcheck; repeat the flag); a guard that needs one not given says NOT DECIDABLE")
	fs.BoolVar(&o.defaultSettings, "default-settings", false, "assume CloudStack's defaults for the settings not given with --setting")
}

func newCheckCmd(e *cliEnv) *cobra.Command {
	o := &checkOpts{}
	c := &cobra.Command{
		Use:   "check FILE [flags]",
		Short: "re-check a saved history (JSON lines)",
		Long: `Re-checks a saved history (JSON lines, as written by repro --history or explore --out): prints the
invariant violations it records, checks each partition's linearizability, and judges every state change
against the transition guards again (docs/guards.md; the run's settings are not in a history: give them
with --setting or --default-settings, or the guards that need them say NOT DECIDABLE). Exit 1 on a
finding, 3 if some object is undecided (the checker timed out on it) and nothing else is found.`,
		Example: `  csconform repro seed-004-forced-destroy --history h.jsonl; csconform check h.jsonl --json`,
		Run: func(_ *cobra.Command, args []string) {
			*e.code = checkCmd(o, args, e.stdout, e.stderr)
		},
	}
	checkFlags(c.Flags(), o)
	return c
}
