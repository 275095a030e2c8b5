package audit_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/harness/audit"
	"github.com/csconform/csconform/harness/audit/cloudsqltest"
	"github.com/csconform/csconform/harness/audit/dsn"
)

// zone is a healthy zone in CloudStack's tables: h1 runs VM 3 (i-2-3-VM) and net1's router
// (r-2-VM), h2 runs VM 4; a host h3 was removed, a VM 9 expunged long ago (its domain is gone too).
var zone = []string{
	"INSERT INTO data_center (id, uuid, name) VALUES (1, 'z-1', 'zone1'), (2, 'z-2', 'zone2')",
	`INSERT INTO host (id, uuid, name, status, type, private_ip_address, data_center_id, removed) VALUES
		(1, 'u-h1', 'h1', 'Up', 'Routing', '10.0.0.1', 1, NULL),
		(2, 'u-h2', 'h2', 'Up', 'Routing', '10.0.0.2', 1, NULL),
		(3, 'u-h3', 'h3', 'Down', 'Routing', '10.0.0.3', 1, '2026-01-01 00:00:00'),
		(4, 'u-ss', 's-1-VM', 'Up', 'SecondaryStorageVM', '10.0.0.9', 1, NULL)`,
	"INSERT INTO networks (id, uuid, name, gateway, cidr, data_center_id, state, created) VALUES (204, 'n-1', 'net1', '10.1.1.1', '10.1.1.0/24', 1, 'Implemented', NOW())",
	`INSERT INTO vm_instance (id, uuid, name, instance_name, state, data_center_id, host_id, last_host_id, removed, type, vm_type) VALUES
		(2, 'v-r2', 'r-2-VM', 'r-2-VM', 'Running', 1, 1, 1, NULL, 'DomainRouter', 'DomainRouter'),
		(3, 'v-3', 'web1', 'i-2-3-VM', 'Running', 1, 1, 1, NULL, 'User', 'User'),
		(4, 'v-4', 'web2', 'i-2-4-VM', 'Running', 1, 2, 2, NULL, 'User', 'User'),
		(9, 'v-9', 'old', 'i-2-9-VM', 'Expunging', 1, NULL, 1, '2026-01-01 00:00:00', 'User', 'User')`,
	`INSERT INTO nics (instance_id, mac_address, ip4_address, network_id, state, device_id, vm_type, removed) VALUES
		(2, '02:00:00:00:00:01', '10.1.1.1', 204, 'Reserved', 0, 'DomainRouter', NULL),
		(3, '02:00:00:00:00:0a', '10.1.1.10', 204, 'Reserved', 0, 'User', NULL),
		(4, '02:00:00:00:00:0b', '10.1.1.11', 204, 'Reserved', 0, 'User', NULL),
		(9, '02:00:00:00:00:09', '10.1.1.9', 204, 'Deallocating', 0, 'User', '2026-01-01 00:00:00')`,
	"INSERT INTO router_network_ref (router_id, network_id, guest_type) VALUES (2, 204, 'Isolated')",
	`INSERT INTO volumes (id, uuid, instance_id, name, path, data_center_id, volume_type, state, removed) VALUES
		(3, 'vol-3', 3, 'ROOT-3', 'ROOT-3.qcow2', 1, 'ROOT', 'Ready', NULL),
		(4, 'vol-4', 4, 'ROOT-4', 'ROOT-4.qcow2', 1, 'ROOT', 'Ready', NULL),
		(9, 'vol-9', 9, 'ROOT-9', 'ROOT-9.qcow2', 1, 'ROOT', 'Expunged', '2026-01-01 00:00:00')`,
}

// domains are what the hosts run (a fake HostSource each): web1 on h1 with its disk on a pool
// mount, the router, web2 on h2.
func domains() []audit.HostSource {
	h1 := audit.HostDomains{Host: "h1", Domains: []audit.Domain{
		{Name: "i-2-3-VM", Running: true, IPs: []string{"10.1.1.10"}, Disks: []string{"/mnt/pool1/ROOT-3.qcow2"}},
		{Name: "r-2-VM", Running: true, IPs: []string{"10.1.1.1"}},
	}}
	h2 := audit.HostDomains{Host: "h2", Domains: []audit.Domain{
		{Name: "i-2-4-VM", Running: true, MACs: []string{"02:00:00:00:00:0b"}, Disks: []string{"/mnt/pool1/ROOT-4.qcow2"}},
	}}
	return []audit.HostSource{
		audit.HostFunc(func() (audit.HostDomains, error) { return h1, nil }),
		audit.HostFunc(func() (audit.HostDomains, error) { return h2, nil }),
	}
}

// What the database says of the healthy zone is what the API would list.
func TestFromDBReadsWhatTheAPIWouldList(t *testing.T) {
	t.Parallel()
	srv := cloudsqltest.Start(t, "cloud", true)
	srv.Exec(t, zone...)
	db, err := audit.OpenDB(audit.DBOptions{DSN: srv.DSN("cloud", "s3cret", "cloud")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec, err := db.Records()
	if err != nil {
		t.Fatal(err)
	}
	want := audit.Records{
		VMs: []audit.VMRecord{
			{ID: "v-r2", InstanceName: "r-2-VM", DisplayName: "r-2-VM", Type: "DomainRouter", State: "Running", HostName: "h1",
				NetworkIDs: []string{"n-1"}, NICs: []audit.NIC{{NetworkID: "n-1", IP: "10.1.1.1", MAC: "02:00:00:00:00:01"}}},
			{ID: "v-3", InstanceName: "i-2-3-VM", DisplayName: "web1", Type: "User", State: "Running", HostName: "h1",
				NICs: []audit.NIC{{NetworkID: "n-1", IP: "10.1.1.10", MAC: "02:00:00:00:00:0a"}}},
			{ID: "v-4", InstanceName: "i-2-4-VM", DisplayName: "web2", Type: "User", State: "Running", HostName: "h2",
				NICs: []audit.NIC{{NetworkID: "n-1", IP: "10.1.1.11", MAC: "02:00:00:00:00:0b"}}},
		},
		Networks: []audit.NetworkRecord{{ID: "n-1", Name: "net1", State: "Implemented", CIDR: "10.1.1.0/24", Gateway: "10.1.1.1"}},
		Volumes: []audit.VolumeRecord{
			{ID: "vol-3", Name: "ROOT-3", VMID: "v-3", Path: "ROOT-3.qcow2", State: "Ready"},
			{ID: "vol-4", Name: "ROOT-4", VMID: "v-4", Path: "ROOT-4.qcow2", State: "Ready"},
		},
		Hosts: []audit.HostRecord{{ID: "u-h1", Name: "h1", State: "Up", IP: "10.0.0.1"}, {ID: "u-h2", Name: "h2", State: "Up", IP: "10.0.0.2"}},
	}
	if !reflect.DeepEqual(rec, want) {
		t.Fatalf("records:\n%+v\nwant:\n%+v", rec, want)
	}
}

// The audit over the database finds what D3 leaves (a VM expunged while its domain runs: the domain
// orphaned, its address free, its volume expunged under it) and D1 (a network Shutdown under its
// running router), and nothing on the healthy zone.
func TestAuditFromDB(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		plant []string
		zone  string
		want  []string // "check object"
	}{
		{name: "clean"},
		{name: "D3: VM expunged, its domain still runs", plant: []string{
			"UPDATE vm_instance SET state = 'Expunging', host_id = NULL, removed = NOW() WHERE id = 3",
			"UPDATE nics SET state = 'Deallocating', removed = NOW() WHERE instance_id = 3",
			"UPDATE volumes SET state = 'Expunged', removed = NOW() WHERE id = 3",
		}, want: []string{"ip-conflict ip:10.1.1.10", "orphan-domain domain:i-2-3-VM", "volume-in-use volume:/mnt/pool1/ROOT-3.qcow2"}},
		{name: "D3 before the expunge: Destroyed, volume Destroy (the NIC still holds the address)", plant: []string{
			"UPDATE vm_instance SET state = 'Destroyed', host_id = NULL WHERE id = 3",
			"UPDATE volumes SET state = 'Destroy' WHERE id = 3",
		}, want: []string{"orphan-domain domain:i-2-3-VM", "volume-in-use volume:ROOT-3.qcow2"}},
		{name: "IP reused by a new VM while the old domain runs", plant: []string{
			"UPDATE vm_instance SET state = 'Expunging', host_id = NULL, removed = NOW() WHERE id = 3",
			"UPDATE nics SET removed = NOW() WHERE instance_id = 3",
			"UPDATE volumes SET removed = NOW(), state = 'Expunged' WHERE id = 3",
			"INSERT INTO vm_instance (id, uuid, name, instance_name, state, data_center_id, host_id, type, vm_type) VALUES (5, 'v-5', 'web3', 'i-2-5-VM', 'Starting', 1, 2, 'User', 'User')",
			"INSERT INTO nics (instance_id, mac_address, ip4_address, network_id, state, device_id) VALUES (5, '02:00:00:00:00:0c', '10.1.1.10', 204, 'Reserved', 0)",
		}, want: []string{"ip-conflict ip:10.1.1.10", "orphan-domain domain:i-2-3-VM", "volume-in-use volume:/mnt/pool1/ROOT-3.qcow2"}},
		{name: "D1: network Shutdown while its router runs", plant: []string{
			"UPDATE networks SET state = 'Shutdown' WHERE id = 204",
		}, want: []string{"network-router network:n-1"}},
		{name: "another zone's records: every domain is an orphan", zone: "zone2",
			want: []string{"orphan-domain domain:i-2-3-VM", "orphan-domain domain:i-2-4-VM", "orphan-domain domain:r-2-VM",
				"volume-in-use volume:/mnt/pool1/ROOT-3.qcow2", "volume-in-use volume:/mnt/pool1/ROOT-4.qcow2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := cloudsqltest.Start(t, "cloud", true)
			srv.Exec(t, zone...)
			srv.Exec(t, c.plant...)
			rep, got := auditDB(t, audit.DBOptions{DSN: srv.DSN("cloud", "", ""), Zone: c.zone})
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				var b strings.Builder
				rep.WriteTable(&b)
				t.Fatalf("findings:\n%s\nwant:\n%s\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"), b.String())
			}
			if len(rep.Errors) > 0 || rep.Domains != 3 || (c.zone == "") != (len(rep.Warnings) == 0) {
				t.Fatalf("report: %+v", rep)
			}
		})
	}
}

// Bad DSNs, an unreachable server and a database that is not CloudStack's are clear errors that
// never show the password.
func TestOpenDBErrors(t *testing.T) {
	t.Parallel()
	srv := cloudsqltest.Start(t, "other", false)
	cases := []struct {
		dsn, zone, want string
		is              error
	}{
		{dsn: "", want: "no DSN"},
		{dsn: "cloud:s3cret@tcp(127.0.0.1:3306", want: "bad DSN"},
		{dsn: "cloud:s3cret@tcp(127.0.0.1:3306)/cloud?timeout=never", want: "bad DSN"},
		{dsn: ":s3cret@tcp(127.0.0.1:3306)/cloud", want: "no user"},
		{dsn: "cloud:s3cret@tcp(127.0.0.1:1)/cloud", want: "cannot reach CloudStack's database tcp(127.0.0.1:1)/cloud as cloud"},
		{dsn: srv.DSN("cloud", "s3cret", "other"), want: "has no table host, vm_instance, nics, networks, volumes, router_network_ref, data_center", is: audit.ErrNotCloudStack},
	}
	for _, c := range cases {
		_, err := audit.OpenDB(audit.DBOptions{DSN: c.dsn})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("OpenDB(%s): %v, want %q", dsn.Redact(c.dsn), err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("OpenDB(%s): the error shows the password: %v", dsn.Redact(c.dsn), err)
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("OpenDB(%s): %v is not %v", dsn.Redact(c.dsn), err, c.is)
		}
	}
	// an unknown zone
	ok := cloudsqltest.Start(t, "cloud", true)
	db, err := audit.OpenDB(audit.DBOptions{DSN: ok.DSN("cloud", "s3cret", "cloud"), Zone: "nowhere"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Records(); err == nil || !strings.Contains(err.Error(), `no zone "nowhere"`) {
		t.Fatalf("unknown zone: %v", err)
	}
	for d, want := range map[string]string{
		"cloud:s3cret@tcp(db:3306)/cloud": "cloud:***@tcp(db:3306)/cloud",
		"cloud@tcp(db:3306)/cloud":        "cloud@tcp(db:3306)/cloud",
		"cloud:s3cret@tcp(db:3306":        "<unparsable DSN>",
	} {
		if got := dsn.Redact(d); got != want {
			t.Errorf("Redact(…) = %s, want %s", got, want)
		}
		if got := (audit.DBOptions{DSN: d}).String(); strings.Contains(got, "s3cret") {
			t.Errorf("DBOptions.String shows the password: %s", got)
		}
	}
}

// A password is never shown, whatever shape the DSN has: the driver's own messages echo the part
// they could not parse ("default addr for network 'user:Secret' unknown"), and a parameter's value.
func TestDSNSecretNeverShown(t *testing.T) {
	t.Parallel()
	const secret = "Zq7Secr3tXv"
	cases := []struct{ name, dsn, env string }{
		{"no @: the password read as a network (issue 16)", "user:" + secret + "/cloud", ""},
		{"no @, no slash", "user:" + secret, ""},
		{"@ and nothing after", "user:" + secret + "@", ""},
		{"@ then a database", "user:" + secret + "@/cloud?timeout=x", ""},
		{"address without a network", "user:" + secret + "@127.0.0.1:3306/cloud", ""},
		{"URL form", "mysql://user:" + secret + "@127.0.0.1:3306/cloud", ""},
		{"URL form with a network", "mysql://user:" + secret + "@tcp(127.0.0.1:1)/cloud", ""},
		{"address not terminated", "user:" + secret + "@tcp(127.0.0.1:3306/cloud", ""},
		{"no slash", "user:" + secret + "@tcp(127.0.0.1:3306)", ""},
		{"unknown network", "user:" + secret + "@foo(127.0.0.1:3306)/cloud", ""},
		{"the secret as a network", "user@" + secret + "(127.0.0.1:3306)/cloud", ""},
		{"the secret in a duration", "user:" + secret + "@tcp(127.0.0.1:3306)/cloud?timeout=" + secret, ""},
		{"the secret in a bool", "user:" + secret + "@tcp(127.0.0.1:3306)/cloud?parseTime=" + secret, ""},
		{"the secret as a TLS config", "user:" + secret + "@tcp(127.0.0.1:3306)/cloud?tls=" + secret, ""},
		{"the secret as a location", "user:" + secret + "@tcp(127.0.0.1:3306)/cloud?loc=" + secret, ""},
		{"the secret as a collation", "user:" + secret + "@tcp(127.0.0.1:3306)/cloud?collation=" + secret, ""},
		{"the secret as a number", "user:" + secret + "@tcp(127.0.0.1:3306)/cloud?maxAllowedPacket=" + secret, ""},
		{"the secret as a server pub key", "user:" + secret + "@tcp(127.0.0.1:3306)/cloud?serverPubKey=" + secret, ""},
		{"a password parameter (sent as SET by the driver)", "user@tcp(127.0.0.1:1)/cloud?password=" + secret, ""},
		{"a parameter named like the secret", "user@tcp(127.0.0.1:1)/cloud?" + secret + "=1", ""},
		{"a bad escape", "user:" + secret + "@tcp(127.0.0.1:3306)/cloud?x=%zz", ""},
		{"a bad escape in the database name", "user:" + secret + "@tcp(127.0.0.1:3306)/cl%zzoud", ""},
		{"no user", ":" + secret + "@tcp(127.0.0.1:3306)/cloud", ""},
		{"two @", "user:" + secret + "@@tcp(127.0.0.1:1)/cloud", ""},
		{"special characters", "user:" + secret + ":/@(x)?&=@tcp(127.0.0.1:1)/cloud", ""},
		{"spaces", "  user:" + secret + " @ tcp(127.0.0.1:1)/cloud ", ""},
		{"a newline", "user:" + secret + "\n@tcp(127.0.0.1:1)/cloud", ""},
		{"unreachable", "user:" + secret + "@tcp(127.0.0.1:1)/cloud", ""},
		{"unix socket that is not there", "user:" + secret + "@unix(/nonexistent/mysql.sock)/cloud", ""},
		{"the password from the environment, a bad DSN", "user/cloud", secret},
		{"the password from the environment, unreachable", "user@tcp(127.0.0.1:1)/cloud", secret},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := audit.DBOptions{DSN: c.dsn, Password: c.env, Timeout: 2 * time.Second}
			db, err := audit.OpenDB(o)
			if err == nil {
				db.Close()
				t.Fatalf("OpenDB accepted %s", dsn.Redact(c.dsn))
			}
			shown := err.Error() + "\n" + dsn.Redact(c.dsn) + "\n" + fmt.Sprintf("%v %+v %#v %s", o, o, o, o)
			for _, part := range []string{secret, "Secr3t"} {
				if strings.Contains(shown, part) {
					t.Fatalf("the password is shown:\n%s", shown)
				}
			}
			if strings.Count(err.Error(), "\n") > 0 {
				t.Fatalf("not one line: %q", err)
			}
		})
	}
}

// auditDB audits the database opts names against domains() and returns the report with its findings
// as "check object" lines.
func auditDB(t *testing.T, opts audit.DBOptions) (*audit.Report, []string) {
	t.Helper()
	db, err := audit.OpenDB(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rep, err := audit.Run(context.Background(), audit.Config{Records: db.Records, Hosts: domains()})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.Check+" "+f.Object)
	}
	return rep, got
}
