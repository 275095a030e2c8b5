package main

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/harness/audit/cloudsqltest"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/impl/cloudapi"
)

func TestAuditFlags(t *testing.T) {
	env := live.NewEnv()
	defer env.Close()
	ln, err := live.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg, _ := impl.NewConfig(nil)
	srv := impl.NewServer("ms1", env, impl.NewDB(env, nil), cfg, impl.Switches{}, ln)
	ts := httptest.NewServer(cloudapi.New(srv, cloudapi.Options{}, cloudapi.Credentials{APIKey: "k", SecretKey: "s3cret"}))
	defer ts.Close()
	api := ts.URL + "/client/api"
	runCLICases(t, []cliCase{
		{[]string{"audit", "--help"}, 0, "network-router"},
		{[]string{"audit", "--host", "h1=qemu:///system"}, 2, "--api URL (or --db DSN) is required"},
		{[]string{"audit", "--api", api, "--api-key", "k", "--secret-key", "s3cret"}, 2, "give the hosts"},
		{[]string{"audit", "--api", api, "--api-key", "k", "--secret-key", "s3cret", "--host", "h1"}, 2, "NAME=URI"},
		{[]string{"audit", "--api", api, "--db", "user@/cloud", "--host", "h1=x"}, 2, "give one"},
		{[]string{"audit", "--api", api, "--api-key", "k", "--host", "h1=x"}, 2, "go together"},
		// a wrong secret: the records cannot be read
		{[]string{"audit", "--api", api, "--api-key", "k", "--secret-key", "wrong", "--host", "h1=qemu+tcp://127.0.0.1:1/system"}, 2, "401"},
		// an unreachable libvirtd: nothing judged there, exit 2
		{[]string{"audit", "--api", api, "--api-key", "k", "--secret-key", "s3cret", "--host", "h1=qemu+tcp://127.0.0.1:1/system"}, 2, "cannot reach libvirtd"},
		// an unreachable API: the error names no key or signature
		{[]string{"audit", "--api", "http://127.0.0.1:1/client/api", "--api-key", "k", "--secret-key", "s3cret", "--host", "h1=x"}, 2, "127.0.0.1:1/client/api?…"},
		// no hosts recorded yet
		{[]string{"audit", "--api", api, "--api-key", "k", "--secret-key", "s3cret", "--hosts-from-api", "qemu+ssh://root@{name}/system"}, 2, "no Routing host"},
	})
}

// audit --db: bad DSNs, an unreachable server and a database that is not CloudStack's are exit 2
// with a clear message that never shows the password; CloudStack's tables are read (an unreachable
// libvirtd then is the only error).
func TestAuditDBFlags(t *testing.T) {
	cloud := cloudsqltest.Start(t, "cloud", true)
	cloud.Exec(t, "INSERT INTO host (id, uuid, name, status, type, private_ip_address, data_center_id) VALUES (1, 'u-h1', 'h1', 'Up', 'Routing', '127.0.0.1', 1)")
	other := cloudsqltest.Start(t, "other", false)
	empty := cloudsqltest.Start(t, "cloud", true)
	t.Setenv(envDBPassword, "")
	cases := []cliCase{
		{[]string{"audit", "--db", "cloud:s3cret@tcp(127.0.0.1:3306", "--host", "h1=x"}, 2, "--db: bad DSN (not shown: it may hold a password): no /DATABASE after the address"},
		// issue 16: the driver's message quoted the password ("default addr for network 'user:s3cret' unknown")
		{[]string{"audit", "--db", "user:s3cret/cloud", "--host", "h1=x"}, 2, "--db: bad DSN (not shown: it may hold a password): no @"},
		{[]string{"audit", "--db", "cloud:s3cret@tcp(127.0.0.1:3306)/cloud?parseTime=s3cret", "--host", "h1=x"}, 2, "a parameter wants true or false"},
		{[]string{"audit", "--db", "cloud:s3cret@tcp(127.0.0.1:3306)/cloud?timeout=soon", "--host", "h1=x"}, 2, "bad DSN"},
		{[]string{"audit", "--db", "cloud:s3cret@tcp(127.0.0.1:1)/cloud", "--host", "h1=x"}, 2, "cannot reach CloudStack's database tcp(127.0.0.1:1)/cloud as cloud"},
		{[]string{"audit", "--db", other.DSN("cloud", "s3cret", "other"), "--host", "h1=x"}, 2, "is this CloudStack's `cloud` database?"},
		{[]string{"audit", "--db", cloud.DSN("cloud", "s3cret", "cloud"), "--zone", "nowhere", "--host", "h1=x"}, 2, `no zone "nowhere"`},
		{[]string{"audit", "--db", empty.DSN("cloud", "s3cret", "cloud"), "--hosts-from-records", "qemu+tcp://{ip}:1/system"}, 2, "no Routing host"},
		// the records are read; the host recorded there cannot be reached
		{[]string{"audit", "--db", cloud.DSN("cloud", "s3cret", "cloud"), "--hosts-from-records", "qemu+tcp://{ip}:1/system"}, 2, "cannot reach libvirtd"},
		{[]string{"audit", "--db", cloud.DSN("cloud", "", ""), "--host", "h1=qemu+tcp://127.0.0.1:1/system", "--json"}, 2, `"hosts": null`},
	}
	runCLICases(t, cases)
	for _, c := range cases {
		var out, errb bytes.Buffer
		run(c.args, &out, &errb)
		if strings.Contains(out.String()+errb.String(), "s3cret") {
			t.Errorf("%v shows the password:\n%s%s", c.args[:3], out.String(), errb.String())
		}
	}
	// the password from the environment is used and not shown either
	t.Setenv(envDBPassword, "s3cret")
	runCLICases(t, []cliCase{{[]string{"audit", "--db", "cloud@tcp(127.0.0.1:1)/cloud", "--host", "h1=x"}, 2, "cannot reach"}})
}

// audit --db refuses the driver options that let a hostile MySQL server read local files or get the
// password in clear, before connecting (exit 2).
func TestAuditRefusesUnsafeDSNOptions(t *testing.T) {
	runCLICases(t, []cliCase{
		{[]string{"audit", "--db", "u:pw@tcp(127.0.0.1:1)/cloud?allowAllFiles=true", "--host", "h1=x"}, 2, "allowAllFiles=true lets the database server read any local file"},
		{[]string{"audit", "--db", "u:pw@tcp(127.0.0.1:1)/cloud?allowCleartextPasswords=1", "--host", "h1=x"}, 2, "allowCleartextPasswords"},
		{[]string{"audit", "--db", "u:pw@tcp(127.0.0.1:1)/cloud?allowOldPasswords=true", "--host", "h1=x"}, 2, "allowOldPasswords"},
	})
}
