package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"

	"github.com/csconform/csconform/drivers/control"
	"github.com/csconform/csconform/internal/tier"
)

func TestAPICredentialFlags(t *testing.T) {
	runCLICases(t, []cliCase{
		{[]string{"server", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--api", "127.0.0.1:0", "--api-key", "k"}, 2, "go together"},
		{[]string{"server", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--api", "127.0.0.1:99999", "--api-key", "k", "--secret-key", "s3cret-long-enough-42"}, 2, "api endpoint"},
	})
}

func TestAPIKeysFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys")
	c, got, generated, err := apiCredentials("", "", path)
	if err != nil || got != path || !generated {
		t.Fatalf("generate: %v %q", err, got)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("keys file mode: %v %v", err, fi)
	}
	again, _, generated, err := apiCredentials("", "", path)
	if err != nil || again != c || generated {
		t.Fatalf("the file is not read back: %v", err)
	}
	t.Setenv(envAPIKey, "ek")
	t.Setenv(envSecretKey, "es-long-enough-1234")
	if e, _, _, _ := apiCredentials("", "", path); e.APIKey != "ek" || e.SecretKey != "es-long-enough-1234" {
		t.Fatalf("the environment does not win over the file: %v", e)
	}
	if f, _, _, _ := apiCredentials("fk", "fs-long-enough-1234", path); f.APIKey != "fk" || f.SecretKey != "fs-long-enough-1234" {
		t.Fatalf("flags do not win: %v", f)
	}
}

// csconform server --api with the secret from the environment, one agent: cloudstack-go deploys a VM
// through the API face; a wrong secret is refused; the secret shows up in no output or history.
func TestServerAPIThroughCloudStackGo(t *testing.T) {
	tier.Need(t, tier.Long) // builds csconform and runs it in real time: about 10 s
	t.Parallel()            // mostly waiting: beside the package's other real-time tests
	dir := t.TempDir()
	bin := buildCSConform(t)
	const key, secret = "an-api-key", "the-secret-key-7f3a9"
	hist := filepath.Join(dir, "history.jsonl")
	srv, out := startProcEnv(t, []string{control.EnvToken + "=" + testControlToken, control.EnvAgentKey + "=" + testAgentKey, envAPIKey + "=" + key, envSecretKey + "=" + secret}, bin, "server", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--api", "127.0.0.1:0",
		"--config", "ping.interval=1", "--config", "vm.job.check.interval=200", "--history", hist, "--verbose")
	addrs, lines := listening(out, "agents", "api")
	agentAddr, api := addrs["agents"], addrs["api"]
	var stdout strings.Builder
	for _, l := range lines {
		stdout.WriteString(l + "\n")
	}
	if api == "" {
		t.Fatalf("no api address; stderr:\n%s", srv.stderr.String())
	}
	startProc(t, bin, "agent", "--host", "h1", "--server", agentAddr)
	c := cs.NewAsyncClient(api, key, secret, false)
	poll(t, 15*time.Second, "h1 Up", func() bool {
		h, err := c.Host.ListHosts(c.Host.NewListHostsParams())
		return err == nil && h.Count == 1 && h.Hosts[0].State == "Up"
	})
	z, err := c.Zone.ListZones(c.Zone.NewListZonesParams())
	if err != nil {
		t.Fatal(err)
	}
	offs, err := c.NetworkOffering.ListNetworkOfferings(c.NetworkOffering.NewListNetworkOfferingsParams())
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Network.CreateNetwork(c.Network.NewCreateNetworkParams("guest", offs.NetworkOfferings[0].Id, z.Zones[0].Id))
	if err != nil {
		t.Fatal(err)
	}
	so, _ := c.ServiceOffering.ListServiceOfferings(c.ServiceOffering.NewListServiceOfferingsParams())
	tp, _ := c.Template.ListTemplates(c.Template.NewListTemplatesParams("executable"))
	p := c.VirtualMachine.NewDeployVirtualMachineParams(so.ServiceOfferings[0].Id, tp.Templates[0].Id, z.Zones[0].Id)
	p.SetNetworkids([]string{n.Id})
	vm, err := c.VirtualMachine.DeployVirtualMachine(p)
	if err != nil || vm.State != "Running" || vm.Hostname != "h1" {
		t.Fatalf("deploy through the API: %v %+v", err, vm)
	}
	bad := cs.NewClient(api, key, "not-"+secret, false)
	if _, err := bad.Zone.ListZones(bad.Zone.NewListZonesParams()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a wrong secret: %v", err)
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	if code := srv.waitExit(t); code != 0 {
		t.Fatalf("server exited %d", code)
	}
	h, _ := os.ReadFile(hist)
	for what, s := range map[string]string{"stdout": stdout.String(), "stderr": srv.stderr.String(), "history": string(h)} {
		if strings.Contains(s, secret) {
			t.Fatalf("the secret key appears in the server's %s", what)
		}
	}
	if !strings.Contains(srv.stderr.String(), "signature does not match") {
		t.Fatalf("the refused request is not logged:\n%s", srv.stderr.String())
	}
}
