package process

import (
	"context"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/csconform/csconform/drivers/control"
	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/impl"
)

const token = "the-process-test-control-token"

// start opens and starts a server on stateFile, its control endpoint on loopback: its base URL.
func start(t *testing.T, stateFile string) (*Server, string) {
	t.Helper()
	sink, closeSink, err := live.NewLogSink(io.Discard, false, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeSink)
	cfg, err := impl.NewConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	agents, err := live.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agents.Close() })
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	s, err := Open(sink, stateFile)
	if err != nil {
		t.Fatal(err)
	}
	s.Start(Options{ID: "ms1", Config: cfg, Sink: sink, Agents: agents, AgentKey: "the-process-test-agent-key", Control: cl, ControlToken: token})
	return s, "http://" + cl.Addr().String()
}

// The process serves its control endpoint over its database, which a process started again on the
// same state file finds as it was.
func TestServerKeepsItsState(t *testing.T) {
	state := filepath.Join(t.TempDir(), "db.json")
	s, base := start(t, state)
	ctx := context.Background()
	var nw struct{ ID int64 }
	if err := control.Call(ctx, base, token, "createNetwork", url.Values{"name": {"n1"}}, &nw); err != nil || nw.ID == 0 {
		t.Fatalf("createNetwork: %+v %v", nw, err)
	}
	s.Detach()
	s.Shutdown()
	s.Close()

	again, base := start(t, state)
	defer again.Close()
	defer again.Shutdown()
	var nets []struct{ ID int64 }
	if err := control.Call(ctx, base, token, "listNetworks", nil, &nets); err != nil || len(nets) != 1 || nets[0].ID != nw.ID {
		t.Fatalf("after a restart: %+v %v", nets, err)
	}
}
