package main

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// auditOpts are audit's flags.
type auditOpts struct {
	apiURL, apiKey, secretKey, keysFile string
	zone                                string
	insecure                            bool
	dsn                                 string
	hosts                               hostFlags
	fromAPI, prefix, run                string
	allDomains                          bool
	confirm                             time.Duration
	asJSON                              bool
	timeout                             time.Duration
}

func auditFlags(fs *pflag.FlagSet, o *auditOpts) {
	// records: one source, --api or --db
	fs.StringVar(&o.apiURL, "api", "", "read the records from CloudStack's API at `URL`, e.g. http://mgmt:8080/client/api (list* commands only)")
	fs.StringVar(&o.apiKey, "api-key", "", "the API `KEY` (else $CSCONFORM_API_KEY, else --api-keys-file)")
	fs.StringVar(&o.secretKey, "secret-key", "", "the `SECRET` key (else $CSCONFORM_SECRET_KEY, else --api-keys-file); never printed or logged")
	fs.StringVar(&o.keysFile, "api-keys-file", "", "the key pair as KEY=VALUE lines in `FILE`")
	fs.BoolVar(&o.insecure, "insecure", false, "do not verify the API's TLS certificate")
	fs.StringVar(&o.dsn, "db", "", "read the records from CloudStack's MySQL database instead, read-only: `DSN` USER[:PASSWORD]@tcp(HOST:3306)/cloud (go-sql-driver/mysql's; the database defaults to cloud). Give the password in $CSCONFORM_DB_PASSWORD rather than in the DSN; it is never printed. A read-only MySQL user is enough (SELECT on cloud.*). allowAllFiles, allowCleartextPasswords and allowOldPasswords are refused (the first lets the server read local files)")
	fs.StringVar(&o.zone, "zone", "", "only this `ZONE` (uuid or name; id or name with --api)")
	// hosts
	fs.Var(&o.hosts, "host", "a host (its name in CloudStack) and its libvirt URI, repeatable: qemu:///system, qemu+ssh://root@kvm1/system (OpenSSH, with your ssh config), qemu+tcp://kvm1/system")
	fs.StringVar(&o.fromAPI, "hosts-from-api", "", "every Routing host the records give (of --zone), its URI from `TEMPLATE`: {name} is the host's name, {id} its id, {ip} its address, e.g. 'qemu+ssh://root@{name}/system'")
	fs.StringVar(&o.fromAPI, "hosts-from-records", "", "the same as --hosts-from-api (`TEMPLATE`)")
	fs.StringVar(&o.prefix, "domain-prefix", "", "strip `P` from domain names to get instance names ({host} is the host's name); domains without it are ignored, e.g. 'csc-RUN-{host}-' for drivers/libvirt")
	fs.StringVar(&o.run, "run", "", "only the domains csconform run `ID` made for each host (their libvirt label), named by the label")
	fs.BoolVar(&o.allDomains, "all-domains", false, "judge every domain, not only those named i-…, r-…, s-…, v-…")
	// output
	fs.DurationVar(&o.confirm, "confirm", 0, "read everything again after `D` and report only what both passes find (an operation in flight can look like damage once); default: one pass")
	fs.BoolVar(&o.asJSON, "json", false, "the report as JSON")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "per API request, or connecting to and reading the database")
}

func newAuditCmd(e *cliEnv) *cobra.Command {
	o := &auditOpts{}
	c := &cobra.Command{
		Use:   "audit (--api URL | --db DSN) (--host NAME=URI ... | --hosts-from-api TEMPLATE) [flags]",
		Short: "CloudStack's records against the hosts' domains, read-only",
		Long: `Compares what CloudStack records (read through its API with list* commands only, or from its MySQL
database with SELECTs in a READ ONLY transaction) with what the hosts run (their libvirtd, read
only), and reports:
  orphan-domain   a running domain whose VM record is missing (expunged), Destroyed, Expunging, Error,
                  Stopped, or places it on another host (the end state of D2 and D3)
  ip-conflict     a guest IP used by two running domains, or free in CloudStack (held by no NIC) while a
                  running domain uses it, or allocated to another VM
  volume-in-use   a disk a running domain holds whose volume is Destroy, Expunging, Expunged or gone
  network-router  a network recorded Shutdown while its virtual router's domain runs (D1)

The rows read from --db are those the API lists: removed rows (expunged VMs, their NICs, expunged
volumes) are not records, as in listVirtualMachines. Exit 1 when something is found, 2 on bad input,
unreadable records or an unreadable host (with nothing found on the others).`,
		Example: `  csconform audit --api http://mgmt:8080/client/api --hosts-from-api 'qemu+ssh://root@{name}/system'
  csconform audit --db 'cloud@tcp(db:3306)/cloud' --host kvm1=qemu+tcp://kvm1/system --confirm 30s`,
		Args: noArgs,
		Run: func(_ *cobra.Command, _ []string) {
			*e.code = auditCmd(o, e.stdout, e.stderr)
		},
	}
	auditFlags(c.Flags(), o)
	return c
}
