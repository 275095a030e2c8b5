package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/logcheck"
	"github.com/csconform/csconform/model/guard"
	"github.com/csconform/csconform/model/history"
)

// logcheckCmd runs logcheck with these arguments (tests call it).
func logcheckCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runIO(append([]string{"logcheck"}, args...), stdin, stdout, stderr)
}

// logcheckRun judges the logs in files, or renders a history's log with --render.
func logcheckRun(f *logcheckOpts, files []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if f.render != "" {
		return renderLog(f.render, f.style, stdout, stderr)
	}
	if len(files) == 0 {
		fmt.Fprint(stderr, "csconform logcheck: no log given (see csconform logcheck --help)\n")
		return 2
	}
	var o logcheck.Options
	o.Stuck = f.stuck
	gcfg, err := guardSettings(f.settings, f.defaultSettings)
	if err != nil {
		fmt.Fprintf(stderr, "csconform logcheck: %v\n", err)
		return 2
	}
	o.Guard = gcfg
	for _, x := range []struct {
		s   string
		dst *time.Time
	}{{f.since, &o.Since}, {f.until, &o.Until}} {
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
	if f.events != "" {
		f, err := os.Create(f.events)
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
	if f.asJSON {
		if err := rep.JSON(stdout); err != nil {
			fmt.Fprintf(stderr, "csconform logcheck: %v\n", err)
			return 2
		}
	} else {
		rep.Text(stdout)
	}
	if f.junit != "" {
		if err := os.WriteFile(f.junit, rep.JUnit(), 0o644); err != nil {
			fmt.Fprintf(stderr, "csconform logcheck: %v\n", err)
			return 2
		}
	}
	if f.out != "" {
		if err := writeLogcheckReports(f.out, rep); err != nil {
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

// guardKeys are the settings the transition guards read.
var guardKeys = []string{"ping.interval", "ping.timeout", "network.gc.wait", "job.expire.minutes", "job.cancel.threshold.minutes", "wait"}

// guardSettings is the guards' view of the logged server's settings: those given (KEY=VALUE), and
// CloudStack's defaults for the others if defaults is set; a setting neither gives stays unknown.
func guardSettings(settings []string, defaults bool) (guard.Config, error) {
	given := map[string]string{}
	for _, kv := range settings {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !slices.Contains(guardKeys, k) {
			return guard.Config{}, fmt.Errorf("--setting wants KEY=VALUE with KEY one of %s, got %q", strings.Join(guardKeys, ", "), kv)
		}
		given[k] = v
	}
	cfg, err := impl.NewConfig(given)
	if err != nil {
		return guard.Config{}, fmt.Errorf("--setting: %v", err)
	}
	all := harness.GuardConfig(cfg)
	if defaults {
		return all, nil
	}
	var out guard.Config
	_, pi := given["ping.interval"]
	_, pt := given["ping.timeout"]
	if pi {
		out.PingInterval = all.PingInterval
	}
	if pi && pt {
		out.PingTimeout = all.PingTimeout
	}
	if _, ok := given["network.gc.wait"]; ok {
		out.GCWait = all.GCWait
	}
	if _, ok := given["job.expire.minutes"]; ok {
		out.JobExpire = all.JobExpire
	}
	if _, ok := given["job.cancel.threshold.minutes"]; ok {
		out.JobCancel = all.JobCancel
	}
	if _, ok := given["wait"]; ok {
		out.Wait = all.Wait
	}
	return out, nil
}
