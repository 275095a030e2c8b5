package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/csconform/csconform/logcheck"
	"github.com/csconform/csconform/model/history"
)

const logcheckUsage = `Usage: csconform logcheck FILE|DIR|- ... [flags]

Reads CloudStack management-server.log files (any 4.x layout; rotated .gz files too; a directory
gives its *.log* files; - reads standard input), one directory per management server, merges them
by time and judges them with the invariants a log can decide and the porcupine models.

Flags:
  --since T, --until T   only entries in this window ("2006-01-02 15:04:05" or RFC 3339)
  --stuck D              how long an object may sit in a transitional state (default 30m)
  --json                 print the report as JSON
  --out DIR              write report.txt, report.json and junit.xml into DIR
  --junit FILE           write a JUnit report (one case per check) to FILE
  --events FILE          write the extracted events as a model/history JSON-lines file (each
                         event's detail ends with the file:line it came from)

  csconform logcheck --render HISTORY [--style 4.22|4.5]
                         write the management-server.log of a saved reference history
                         (csconform repro NAME --history HISTORY) to stdout, in the 4.22 or the
                         4.5 layout and wording, for logcheck to read

Exit status: 0 nothing found, 1 a finding, 2 bad input, 3 nothing could be decided (the log carries
none of the lines the checks need: DEBUG level is needed).
`

func logcheckCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("logcheck", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	since := fs.String("since", "", "")
	until := fs.String("until", "", "")
	stuck := fs.Duration("stuck", 30*time.Minute, "")
	asJSON := fs.Bool("json", false, "")
	out := fs.String("out", "", "")
	junit := fs.String("junit", "", "")
	events := fs.String("events", "", "")
	render := fs.String("render", "", "")
	style := fs.String("style", "4.22", "")
	// flags may follow the files: parse them in turns
	var files []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if err == flag.ErrHelp {
				fmt.Fprint(stdout, logcheckUsage)
				return 0
			}
			fmt.Fprintf(stderr, "csconform logcheck: %v\n", err)
			return 2
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		files = append(files, rest[0])
		rest = rest[1:]
	}
	if *render != "" {
		return renderLog(*render, *style, stdout, stderr)
	}
	if len(files) == 0 {
		fmt.Fprint(stderr, "csconform logcheck: no log given\n\n"+logcheckUsage)
		return 2
	}
	var o logcheck.Options
	o.Stuck = *stuck
	for _, x := range []struct {
		s   string
		dst *time.Time
	}{{*since, &o.Since}, {*until, &o.Until}} {
		if x.s == "" {
			continue
		}
		t, err := parseWhen(x.s)
		if err != nil {
			fmt.Fprintf(stderr, "csconform logcheck: %v\n", err)
			return 2
		}
		*x.dst = t
	}
	if *events != "" {
		f, err := os.Create(*events)
		if err != nil {
			fmt.Fprintf(stderr, "csconform logcheck: %v\n", err)
			return 2
		}
		defer f.Close()
		bw := bufio.NewWriter(f)
		defer bw.Flush()
		enc := json.NewEncoder(bw)
		o.Events = func(e history.Event, origin string) {
			if e.Detail == "" {
				e.Detail = origin
			} else {
				e.Detail += " (" + origin + ")"
			}
			enc.Encode(e)
		}
	}
	paths, skipped, err := logcheck.Expand(files)
	if err != nil {
		fmt.Fprintf(stderr, "csconform logcheck: %v\n", err)
		return 2
	}
	rep, err := logcheck.Run(paths, stdin, o)
	if err != nil {
		fmt.Fprintf(stderr, "csconform logcheck: bad input: %v\n", err)
		return 2
	}
	rep.Skipped = skipped
	if *asJSON {
		if err := rep.JSON(stdout); err != nil {
			fmt.Fprintf(stderr, "csconform logcheck: %v\n", err)
			return 2
		}
	} else {
		rep.Text(stdout)
	}
	if *junit != "" {
		if err := os.WriteFile(*junit, rep.JUnit(), 0o644); err != nil {
			fmt.Fprintf(stderr, "csconform logcheck: %v\n", err)
			return 2
		}
	}
	if *out != "" {
		if err := writeLogcheckReports(*out, rep); err != nil {
			fmt.Fprintf(stderr, "csconform logcheck: %v\n", err)
			return 2
		}
	}
	return rep.ExitCode()
}

// parseWhen reads a log-style local time or RFC 3339.
func parseWhen(s string) (time.Time, error) {
	for _, l := range []string{"2006-01-02 15:04:05", "2006-01-02 15:04:05,000", "2006-01-02T15:04:05", time.RFC3339, "2006-01-02"} {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("bad time %q (want \"2006-01-02 15:04:05\" or RFC 3339)", s)
}

func writeLogcheckReports(dir string, rep *logcheck.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "report.txt"))
	if err != nil {
		return err
	}
	rep.Text(f)
	if err := f.Close(); err != nil {
		return err
	}
	j, err := os.Create(filepath.Join(dir, "report.json"))
	if err != nil {
		return err
	}
	if err := rep.JSON(j); err != nil {
		j.Close()
		return err
	}
	if err := j.Close(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "junit.xml"), rep.JUnit(), 0o644)
}

// renderLog writes a saved reference history as the management-server.log it stands for.
func renderLog(path, style string, stdout, stderr io.Writer) int {
	st := logcheck.Style422
	switch style {
	case "4.22":
	case "4.5":
		st = logcheck.Style45
	default:
		fmt.Fprintf(stderr, "csconform logcheck: unknown --style %q (4.22 or 4.5)\n", style)
		return 2
	}
	evs, err := history.ReadFile(path, history.Limits{})
	if err != nil {
		fmt.Fprintf(stderr, "csconform logcheck: %v\n", err)
		return 2
	}
	if err := logcheck.WriteLog(stdout, evs, st); err != nil {
		fmt.Fprintf(stderr, "csconform logcheck: %v\n", err)
		return 2
	}
	return 0
}
