package audit

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// HostSource gives one host's domains (LibvirtHost, or an in-memory host in tests).
type HostSource interface {
	Domains() (HostDomains, error)
}

// HostFunc adapts a function to HostSource.
type HostFunc func() (HostDomains, error)

// Domains calls f.
func (f HostFunc) Domains() (HostDomains, error) { return f() }

// Config is one audit.
type Config struct {
	// Records reads what CloudStack records (FromAPI through a read-only client).
	Records func() (Records, error)
	// Hosts give the hosts' domains; with HostsFor set, they are made from the recorded hosts instead.
	Hosts    []HostSource
	HostsFor func(Records) ([]HostSource, error)
	Options  Options
	// Confirm, if > 0, reads everything again after this long and reports only what both passes found.
	Confirm time.Duration
}

// Report is an audit's outcome.
type Report struct {
	Time     time.Time `json:"time"`
	Hosts    []string  `json:"hosts"`
	Domains  int       `json:"domains"` // domains judged
	VMs      int       `json:"vms"`     // VM, router and system VM records
	Networks int       `json:"networks"`
	Volumes  int       `json:"volumes"`
	Passes   int       `json:"passes"`
	Findings []Finding `json:"findings"`
	Ignored  []Ignored `json:"ignored,omitempty"`
	Errors   []string  `json:"errors,omitempty"`   // hosts that could not be read (their domains are not judged)
	Warnings []string  `json:"warnings,omitempty"` // e.g. a host CloudStack does not list
}

// Run audits once (twice with Confirm). An error means the records could not be read; a host that
// cannot be read is in Report.Errors and its domains are not judged.
func Run(ctx context.Context, c Config) (*Report, error) {
	var passes [][]Finding
	var r *Report
	for {
		var err error
		r, err = pass(c)
		if err != nil {
			return nil, err
		}
		passes = append(passes, r.Findings)
		if c.Confirm <= 0 || len(passes) == 2 || len(r.Findings) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(c.Confirm):
		}
	}
	r.Passes = len(passes)
	r.Findings = Confirm(passes...)
	return r, nil
}

func pass(c Config) (*Report, error) {
	opt := c.Options
	if opt.Time.IsZero() {
		opt.Time = time.Now()
	}
	// The domains first, then the records: a domain seen running has a record by the time the records
	// are read, unless something is wrong (or it was stopped meanwhile: Confirm is for that).
	hosts := c.Hosts
	var rec Records
	var err error
	if c.HostsFor != nil {
		if rec, err = c.Records(); err != nil {
			return nil, err
		}
		if hosts, err = c.HostsFor(rec); err != nil {
			return nil, err
		}
	}
	r := &Report{Time: opt.Time}
	var truth []HostDomains
	for _, h := range hosts {
		hd, err := h.Domains()
		if err != nil {
			r.Errors = append(r.Errors, err.Error())
			continue
		}
		truth = append(truth, hd)
		r.Hosts = append(r.Hosts, hd.Host)
	}
	if rec, err = c.Records(); err != nil {
		return nil, err
	}
	r.Findings, r.Ignored = Check(rec, truth, opt)
	for _, h := range truth {
		if !slices.ContainsFunc(rec.Hosts, func(x HostRecord) bool { return x.Name == h.Host }) {
			r.Warnings = append(r.Warnings, fmt.Sprintf("host %s is not a Routing host in the records (listHosts, or the host table with --db): check its name (records placing VMs on it say %q)", h.Host, h.Host))
		}
	}
	for _, h := range truth {
		r.Domains += len(h.Domains)
	}
	r.Domains -= len(r.Ignored)
	r.VMs, r.Networks, r.Volumes = len(rec.VMs), len(rec.Networks), len(rec.Volumes)
	sort.Strings(r.Hosts)
	return r, nil
}

// WriteTable prints the report for a person: one line per finding, then what was looked at.
func (r *Report) WriteTable(w io.Writer) {
	if len(r.Findings) == 0 {
		fmt.Fprintln(w, "no damage found")
	} else {
		tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "CHECK\tOBJECT\tHOST\tDETAIL")
		for _, f := range r.Findings {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Check, f.Object, orDash(f.Host), f.Message)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\n%d finding(s); %d domain(s) on %d host(s) [%s] against %d VM/router record(s), %d network(s), %d volume(s)",
		len(r.Findings), r.Domains, len(r.Hosts), strings.Join(r.Hosts, ", "), r.VMs, r.Networks, r.Volumes)
	if r.Passes > 1 {
		fmt.Fprintf(w, "; confirmed by %d passes", r.Passes)
	}
	fmt.Fprintln(w)
	if len(r.Ignored) > 0 {
		fmt.Fprintf(w, "%d domain(s) not judged (not CloudStack's):", len(r.Ignored))
		for _, i := range r.Ignored {
			fmt.Fprintf(w, " %s/%s", i.Host, i.Domain)
		}
		fmt.Fprintln(w)
	}
	for _, e := range r.Errors {
		fmt.Fprintln(w, "ERROR", e)
	}
	for _, e := range r.Warnings {
		fmt.Fprintln(w, "WARNING", e)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
