package main

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// logcheckOpts are logcheck's flags.
type logcheckOpts struct {
	since, until       string
	stuck              time.Duration
	asJSON             bool
	out, junit, events string
	render, style      string
	settings           []string
	defaultSettings    bool
}

func logcheckFlags(fs *pflag.FlagSet, o *logcheckOpts) {
	fs.StringVar(&o.since, "since", "", "only entries from `T` on (\"2006-01-02 15:04:05\" or RFC 3339)")
	fs.StringVar(&o.until, "until", "", "only entries up to `T`")
	fs.DurationVar(&o.stuck, "stuck", 30*time.Minute, "how long (`D`) an object may sit in a transitional state")
	fs.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	fs.StringVar(&o.out, "out", "", "write report.txt, report.json and junit.xml into `DIR`")
	fs.StringVar(&o.junit, "junit", "", "write a JUnit report (one case per check) to `FILE`")
	fs.StringVar(&o.events, "events", "", "write the extracted events as a model/history JSON-lines `FILE` (each event's detail ends with the file:line it came from)")
	fs.StringVar(&o.render, "render", "", "instead, write the management-server.log of a saved reference `HISTORY` (csconform repro NAME --history HISTORY) to stdout, for logcheck to read")
	fs.StringVar(&o.style, "style", "4.22", "--render: the log layout and wording, 4.22 or 4.5")
	fs.StringArrayVar(&o.settings, "setting", nil, "a setting of the logged server the transition guards read, `KEY=VALUE` (ping.interval, ping.timeout, network.gc.wait, job.expire.minutes, job.cancel.threshold.minutes; repeat the flag); a guard that needs one not given says NOT DECIDABLE")
	fs.BoolVar(&o.defaultSettings, "default-settings", false, "assume CloudStack's defaults for the settings not given with --setting")
}

func newLogcheckCmd(e *cliEnv) *cobra.Command {
	o := &logcheckOpts{}
	c := &cobra.Command{
		Use:   "logcheck FILE|DIR|- ... [flags]",
		Short: "judge CloudStack management-server.log files",
		Long: `Reads CloudStack management-server.log files (any 4.x layout; rotated .gz files too; - reads
standard input), one directory per management server, merges them by time and judges them with
the invariants a log can decide and the porcupine models. A directory such as
/var/log/cloudstack/management/ gives its management-server logs (management-server.log and its
rotations, management-server.log.2025-02-24.gz); every other file in it (Jetty's access.log,
apilog.log, management-server.out) is skipped, one line each saying so. Lines without a
timestamp (grep output) are read in file order; what needs time says NOT DECIDABLE for them.
Exit 3 when nothing could be decided (the log carries none of the lines the checks need: DEBUG
level is needed).`,
		Example: `  csconform logcheck /var/log/cloudstack/management/
  csconform logcheck ms1/ ms2/ --since "2025-03-01 10:00:00" --out report
  zcat management-server.log.gz | csconform logcheck -
  csconform logcheck --render h.jsonl --style 4.5 > management-server.log`,
		Run: func(_ *cobra.Command, args []string) {
			*e.code = logcheckRun(o, args, e.stdin, e.stdout, e.stderr)
		},
	}
	logcheckFlags(c.Flags(), o)
	return c
}
