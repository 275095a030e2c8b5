package main

import (
	"net/http/httptest"
	"testing"

	"github.com/csconform/csconform/drivers/live"
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
		{[]string{"audit", "--host", "h1=qemu:///system"}, 2, "--api URL is required"},
		{[]string{"audit", "--api", api, "--api-key", "k", "--secret-key", "s3cret"}, 2, "give the hosts"},
		{[]string{"audit", "--api", api, "--api-key", "k", "--secret-key", "s3cret", "--host", "h1"}, 2, "NAME=URI"},
		{[]string{"audit", "--api", api, "--db", "user@/cloud", "--host", "h1=x"}, 2, "not supported"},
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
