package main

// csconform audit: what CloudStack records against what the hosts run. Read-only, always.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/harness/audit"
)

const auditUsage = `Usage:
  csconform audit --api URL [credentials] (--host NAME=URI ... | --hosts-from-api TEMPLATE) [flags]
  csconform audit --db DSN (--host NAME=URI ... | --hosts-from-records TEMPLATE) [flags]

Compares what CloudStack records (read through its API with list* commands only, or from its MySQL
database with SELECTs in a READ ONLY transaction) with what the hosts run (their libvirtd, read
only), and reports:
  orphan-domain   a running domain whose VM record is missing (expunged), Destroyed, Expunging, Error,
                  Stopped, or places it on another host (the end state of D2 and D3)
  ip-conflict     a guest IP used by two running domains, or free in CloudStack (held by no NIC) while a
                  running domain uses it, or allocated to another VM
  volume-in-use   a disk a running domain holds whose volume is Destroy, Expunging, Expunged or gone
  network-router  a network recorded Shutdown while its virtual router's domain runs (D1)

Records (one source: --api or --db, not both):
  --api URL              CloudStack's API, e.g. http://mgmt:8080/client/api
  --api-key KEY, --secret-key SECRET
                         else $CSCONFORM_API_KEY and $CSCONFORM_SECRET_KEY, else --api-keys-file FILE
                         (KEY=VALUE lines). The secret is never printed or logged.
  --insecure             do not verify the API's TLS certificate
  --db DSN               read the records from CloudStack's MySQL database instead, read-only:
                         USER[:PASSWORD]@tcp(HOST:3306)/cloud (go-sql-driver/mysql's DSN; the database
                         defaults to cloud). Give the password in $CSCONFORM_DB_PASSWORD rather than
                         in the DSN; it is never printed (the DSN is shown as USER:***@...). A
                         read-only MySQL user is enough (SELECT on cloud.*). The rows read are those
                         the API lists: removed rows (expunged VMs, their NICs, expunged volumes) are
                         not records, as in listVirtualMachines
  --zone ZONE            only this zone (uuid or name; id or name with --api)
Hosts:
  --host NAME=URI        a host (its name in CloudStack) and its libvirt URI, repeatable:
                         qemu:///system, qemu+ssh://root@kvm1/system, qemu+tcp://kvm1/system
  --hosts-from-api TEMPLATE, --hosts-from-records TEMPLATE (the same)
                         every Routing host the records give (of --zone), its URI from TEMPLATE:
                         {name} is the host's name, {id} its id, {ip} its address,
                         e.g. 'qemu+ssh://root@{name}/system' or 'qemu+tcp://{ip}/system'
  --domain-prefix P      strip P from domain names to get instance names ({host} is the host's name);
                         domains without it are ignored, e.g. 'csc-RUN-{host}-' for drivers/libvirt
  --run ID               only the domains a csconform run made for each host (their libvirt label),
                         named by the label
  --all-domains          judge every domain, not only those named i-…, r-…, s-…, v-…
Output:
  --confirm DURATION     read everything again after DURATION and report only what both passes find
                         (an operation in flight can look like damage once); default: one pass
  --json                 the report as JSON
  --timeout DURATION     per API request, or connecting to and reading the database (default 30s)

Exit status: 0 nothing found, 1 something found, 2 bad input, unreadable records or an unreadable host
(with nothing found on the others).
`

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

func auditCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	apiURL := fs.String("api", "", "")
	apiKey := fs.String("api-key", "", "")
	secretKey := fs.String("secret-key", "", "")
	keysFile := fs.String("api-keys-file", "", "")
	zone := fs.String("zone", "", "")
	insecure := fs.Bool("insecure", false, "")
	dsn := fs.String("db", "", "")
	var hosts hostFlags
	fs.Var(&hosts, "host", "")
	fromAPI := fs.String("hosts-from-api", "", "")
	fs.StringVar(fromAPI, "hosts-from-records", "", "")
	prefix := fs.String("domain-prefix", "", "")
	run := fs.String("run", "", "")
	allDomains := fs.Bool("all-domains", false, "")
	confirm := fs.Duration("confirm", 0, "")
	asJSON := fs.Bool("json", false, "")
	timeout := fs.Duration("timeout", 30*time.Second, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, auditUsage)
			return 0
		}
		fmt.Fprintln(stderr, "csconform audit: see csconform audit -h")
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "csconform audit: "+format+"\n", a...)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		return fail("unexpected argument %q", fs.Arg(0))
	case *apiURL != "" && *dsn != "":
		return fail("--api and --db are two sources of the same records: give one")
	case *apiURL == "" && *dsn == "":
		return fail("--api URL (or --db DSN) is required")
	case len(hosts) == 0 && *fromAPI == "":
		return fail("give the hosts: --host NAME=URI (repeatable) or --hosts-from-api TEMPLATE")
	case len(hosts) > 0 && *fromAPI != "":
		return fail("--host and --hosts-from-api do not go together")
	}
	cfg := audit.Config{
		Options: audit.Options{DomainPrefix: *prefix, AllDomains: *allDomains},
		Confirm: *confirm,
	}
	if *dsn != "" {
		// connect (and check the schema) before touching any host: a bad DSN is bad input
		db, err := audit.OpenDB(audit.DBOptions{DSN: *dsn, Password: os.Getenv(envDBPassword), Zone: *zone, Timeout: *timeout})
		if err != nil {
			return fail("--db: %v", err)
		}
		defer db.Close()
		cfg.Records = db.Records
	} else {
		creds, err := auditCredentials(*apiKey, *secretKey, *keysFile)
		if err != nil {
			return fail("%v", err)
		}
		client := audit.NewAPIClient(audit.APIOptions{URL: *apiURL, APIKey: creds[0], SecretKey: creds[1], Zone: *zone, Timeout: *timeout, Insecure: *insecure})
		cfg.Records = func() (audit.Records, error) { return audit.FromAPI(client, *zone) }
	}
	for i := range hosts {
		hosts[i].Run = *run
		cfg.Hosts = append(cfg.Hosts, hosts[i])
	}
	if *fromAPI != "" {
		tmpl := *fromAPI
		cfg.HostsFor = func(rec audit.Records) ([]audit.HostSource, error) {
			if len(rec.Hosts) == 0 {
				return nil, errors.New("the records have no Routing host (listHosts / host table)")
			}
			var out []audit.HostSource
			for _, h := range rec.Hosts {
				out = append(out, audit.LibvirtHost{Host: h.Name, URI: audit.HostURI(tmpl, h), Run: *run})
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
	if *asJSON {
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
