package main

// csconform audit: what CloudStack records against what the hosts run. Read-only, always.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/csconform/csconform/harness/audit"
)

// hostFlags collects repeated --host NAME=URI.
type hostFlags []audit.LibvirtHost

func (h *hostFlags) String() string { return "" }
func (h *hostFlags) Type() string   { return "NAME=URI" }
func (h *hostFlags) Set(v string) error {
	name, uri, ok := strings.Cut(v, "=")
	if !ok || name == "" || uri == "" {
		return fmt.Errorf("want NAME=URI, got %q", v)
	}
	if slices.ContainsFunc(*h, func(x audit.LibvirtHost) bool { return x.Host == name }) {
		return fmt.Errorf("host %q given twice", name)
	}
	*h = append(*h, audit.LibvirtHost{Host: name, URI: uri})
	return nil
}

// auditCmd compares CloudStack's records with the hosts' domains, read-only.
func auditCmd(o *auditOpts, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "csconform audit: "+format+"\n", a...)
		return 2
	}
	switch {
	case o.apiURL != "" && o.dsn != "":
		return fail("--api and --db are two sources of the same records: give one")
	case o.apiURL == "" && o.dsn == "":
		return fail("--api URL (or --db DSN) is required")
	case len(o.hosts) == 0 && o.fromAPI == "":
		return fail("give the hosts: --host NAME=URI (repeatable) or --hosts-from-api TEMPLATE")
	case len(o.hosts) > 0 && o.fromAPI != "":
		return fail("--host and --hosts-from-api do not go together")
	}
	cfg := audit.Config{
		Options: audit.Options{DomainPrefix: o.prefix, AllDomains: o.allDomains},
		Confirm: o.confirm,
	}
	if o.dsn != "" {
		// connect (and check the schema) before touching any host: a bad DSN is bad input
		db, err := audit.OpenDB(audit.DBOptions{DSN: o.dsn, Password: os.Getenv(envDBPassword), Zone: o.zone, Timeout: o.timeout})
		if err != nil {
			return fail("--db: %v", err)
		}
		defer db.Close()
		cfg.Records = db.Records
	} else {
		creds, err := auditCredentials(o.apiKey, o.secretKey, o.keysFile)
		if err != nil {
			return fail("%v", err)
		}
		client := audit.NewAPIClient(audit.APIOptions{URL: o.apiURL, APIKey: creds[0], SecretKey: creds[1], Zone: o.zone, Timeout: o.timeout, Insecure: o.insecure})
		cfg.Records = func() (audit.Records, error) { return audit.FromAPI(client, o.zone) }
	}
	for i := range o.hosts {
		o.hosts[i].Run = o.run
		cfg.Hosts = append(cfg.Hosts, o.hosts[i])
	}
	if o.fromAPI != "" {
		tmpl := o.fromAPI
		cfg.HostsFor = func(rec audit.Records) ([]audit.HostSource, error) {
			if len(rec.Hosts) == 0 {
				return nil, errors.New("the records have no Routing host (listHosts / host table)")
			}
			var out []audit.HostSource
			for _, h := range rec.Hosts {
				out = append(out, audit.LibvirtHost{Host: h.Name, URI: audit.HostURI(tmpl, h), Run: o.run})
			}
			return out, nil
		}
	}
	ctx, stop := reproContext()
	defer stop()
	rep, err := audit.Run(ctx, cfg)
	if err != nil {
		return fail("%v", err)
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if rep.Findings == nil {
			rep.Findings = []audit.Finding{}
		}
		enc.Encode(rep)
	} else {
		rep.WriteTable(stdout)
	}
	switch {
	case len(rep.Findings) > 0:
		return 1
	case len(rep.Errors) > 0:
		return 2
	}
	return 0
}

// envDBPassword is where audit --db takes the database password from when the DSN has none.
const envDBPassword = "CSCONFORM_DB_PASSWORD"

// auditCredentials: the flags, else the environment, else a keys file. Never printed.
func auditCredentials(key, secret, file string) ([2]string, error) {
	switch {
	case key != "" || secret != "":
		if key == "" || secret == "" {
			return [2]string{}, errors.New("--api-key and --secret-key go together")
		}
		return [2]string{key, secret}, nil
	case os.Getenv(envAPIKey) != "" || os.Getenv(envSecretKey) != "":
		k, s := os.Getenv(envAPIKey), os.Getenv(envSecretKey)
		if k == "" || s == "" {
			return [2]string{}, fmt.Errorf("%s and %s go together", envAPIKey, envSecretKey)
		}
		return [2]string{k, s}, nil
	case file != "":
		c, err := ReadKeysFile(file)
		if err != nil {
			return [2]string{}, err
		}
		return [2]string{c.APIKey, c.SecretKey}, nil
	}
	return [2]string{}, fmt.Errorf("no API key pair: --api-key/--secret-key, $%s/$%s or --api-keys-file", envAPIKey, envSecretKey)
}
