package cloudapi

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
	"github.com/csconform/csconform/impl"
)

// A server whose state file cannot be written (the disk full) answers every command 530
// CloudRuntimeException "DB Exception on: the database cannot be written …", reads too, rather than
// acknowledging writes it holds only in memory; once the disk has room it answers again. Before, the
// full disk was an ERROR line and every write was answered with success.
func TestFullDiskIsA530(t *testing.T) {
	cfg, err := impl.NewConfig(map[string]string{"vm.job.check.interval": "100"})
	if err != nil {
		t.Fatal(err)
	}
	log := &logBuf{}
	env := testEnv{}
	db, err := impl.OpenDB(env, log, filepath.Join(t.TempDir(), "db.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := impl.NewServer("ms1", env, db, cfg, impl.Switches{}, noAgents{never: make(chan struct{})})
	srv.Start()
	ts := httptest.NewServer(New(srv, Options{Logf: log.Logf}, testCreds))
	t.Cleanup(ts.Close)
	u := ts.URL + "/client/api"
	f := &fixture{srv: srv, url: u, log: log, cs: cs.NewClient(u, testCreds.APIKey, testCreds.SecretKey, false)}
	f.network(t, "before")

	full := true
	impl.StateWriteFault = func(string, string) error {
		if full {
			return syscall.ENOSPC
		}
		return nil
	}
	t.Cleanup(func() { impl.StateWriteFault = nil })
	offs, err := f.cs.NetworkOffering.ListNetworkOfferings(f.cs.NetworkOffering.NewListNetworkOfferingsParams())
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.cs.Network.CreateNetwork(f.cs.Network.NewCreateNetworkParams("full", offs.NetworkOfferings[0].Id, f.zone(t)))
	code, cse, text := apiErr(t, err)
	if code != 530 || cse != 4250 || !strings.Contains(text, "DB Exception on: the database cannot be written") || !strings.Contains(text, "no space left on device") {
		t.Fatalf("createNetwork on a full disk: %d %d %q", code, cse, text)
	}
	_, err = f.cs.Network.ListNetworks(f.cs.Network.NewListNetworksParams())
	if code, _, _ := apiErr(t, err); code != 530 {
		t.Fatalf("listNetworks on a full disk: %v", err)
	}

	full = false
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := f.cs.Network.ListNetworks(f.cs.Network.NewListNetworksParams())
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the disk has room again, the server still refuses: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.network(t, "after")
}
