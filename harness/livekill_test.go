package harness

import (
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/internal/tier"
	"github.com/csconform/csconform/model/history"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wait fails the test unless ch is closed within d of wall time.
func wait(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s did not happen within %s", what, d)
	}
}

// noneRunning waits until no goroutine runs a function whose name has one of the prefixes (the
// dead process's code): nothing of it is left running.
func noneRunning(t *testing.T, prefixes ...string) {
	t.Helper()
	var left []string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		left = left[:0]
		buf := make([]byte, 1<<22)
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			for _, p := range prefixes {
				if strings.Contains(g, p) {
					left = append(left, g)
					break
				}
			}
		}
		if len(left) == 0 {
			return
		}
	}
	t.Fatalf("%d goroutines of the dead process left running:\n%s", len(left), strings.Join(left, "\n\n"))
}

// fault applies a fault between two checks: the cluster's fields a stop and a start write (msDown,
// Agents …) are read by the live world's checker task (a scenario's fault task races with it the same
// way; left as it is here).
func fault(c *Cluster, fn func() error) error {
	c.checkMu.Lock()
	defer c.checkMu.Unlock()
	return fn()
}

// after lists the events recorded from the i-th on that keep says are the dead process's.
func after(c *Cluster, i int, keep func(history.Event) bool) []string {
	var out []string
	for e := range c.Rec.History().From(i) {
		if keep(e) {
			out = append(out, e.Actor+" "+string(e.Kind)+" "+e.Object+" "+e.Detail)
		}
	}
	return out
}

// An ms-restart kills the API's threads with the server (kill -9 of the JVM): a createNetwork the
// server was serving when it died creates no network after the kill, whatever the handler would do
// next. In CloudStack the command runs on the servlet container's request thread, which also writes
// the answer and, in a finally, the access log line (apache/cloudstack@7f460b583989f426e1c29223f06ec9bb8c90c793
// server/src/main/java/com/cloud/api/ApiServlet.java, processRequestInContext: apiServer.handleRequest,
// HttpUtils.writeHttpResponse, s_accessLogger.info); a killed JVM's thread does none of it. Before, the
// handler ran on outside the dead process (net/http's goroutine is no task of it) and wrote the
// network row of a dead server.
func TestLiveKilledServerAPIHandlerDoesNothingMore(t *testing.T) {
	tier.Need(t, tier.Long)
	c, err := NewLiveCluster(Options{Hosts: []string{"h1"}}, LiveOptions{Speed: 20, API: true})
	require.NoError(t, err)
	defer c.Close()
	w := c.w.(*liveWorld)
	entered, release, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
	w.hooks.api = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if !strings.EqualFold(r.FormValue("command"), "createNetwork") {
				next.ServeHTTP(rw, r)
				return
			}
			defer close(ended)
			close(entered)
			<-release
			next.ServeHTTP(rw, r)
		})
	}
	require.NoError(t, fault(c, c.ServerStop))
	require.NoError(t, fault(c, c.ServerStart)) // an incarnation with the hook
	created := make(chan error, 1)
	go func() { created <- c.CreateNetwork("client-1", "net-after-kill", false) }()
	wait(t, entered, 10*time.Second, "the createNetwork request")
	require.NoError(t, fault(c, c.ServerStop))
	killed := c.Rec.History().Len()
	close(release)
	wait(t, ended, 10*time.Second, "the dead server's handler's end")
	assert.Error(t, <-created, "the dead server created the network")
	assert.Empty(t, c.DB.Networks(func(n *impl.NetworkVO) bool { return n.Name == "net-after-kill" }), "a network row written after the kill")
	assert.Empty(t, after(c, killed, func(e history.Event) bool {
		return strings.HasPrefix(e.Object, "network:") || strings.Contains(e.Detail, "net-after-kill") && e.Actor != "client-1"
	}), "the dead server's handler acted after the kill")
	// the server is down: none of its API connections' goroutines is left
	noneRunning(t, "net/http.(*conn).serve", "impl/cloudapi.(*Handler)")
}

// heldReport is an agent's hypervisor whose domain list, asked for an out-of-band report, waits
// once (while armed) until released: the agent is inside triggerUpdate, past its liveness check.
type heldReport struct {
	impl.Hypervisor
	armed            *atomic.Bool
	entered, release chan struct{}
}

func (h *heldReport) Running() []string {
	if h.armed.Load() && strings.Contains(string(debug.Stack()), "triggerUpdate") && h.armed.CompareAndSwap(true, false) {
		close(h.entered)
		<-h.release
	}
	return h.Hypervisor.Running()
}

// A killed agent says nothing more: a crash reported to it by libvirt's event callback just before
// kill -9 logs no line and sends no ping once the kill has happened. Before, the kill closed the
// agent's socket first and its process only after, so the callback's "Sending out of band ping" and
// "Unable to send ping update" lines were recorded after the kill, from a dead agent.
func TestLiveKilledAgentSaysNothingMore(t *testing.T) {
	tier.Need(t, tier.Long)
	c, err := NewLiveCluster(Options{Hosts: []string{"h1"}}, LiveOptions{Speed: 20})
	require.NoError(t, err)
	defer c.Close()
	w := c.w.(*liveWorld)
	held := &heldReport{armed: &atomic.Bool{}, entered: make(chan struct{}), release: make(chan struct{})}
	w.hooks.agentHV = func(hv impl.Hypervisor) impl.Hypervisor { held.Hypervisor = hv; return held }
	require.NoError(t, fault(c, func() error { return c.AgentStop("h1", false) }))
	restarted := c.Rec.History().Len()
	require.NoError(t, fault(c, func() error { return c.AgentStart("h1") })) // an incarnation with the hook
	require.Eventually(t, func() bool {
		return len(after(c, restarted, func(e history.Event) bool {
			return e.Actor == "agent/h1" && strings.HasPrefix(e.Detail, "Sending Startup command")
		})) > 0
	}, 10*time.Second, 10*time.Millisecond, "the new agent did not connect")
	hv := w.hosts["h1"].hv
	require.NoError(t, hv.Start(impl.DomainSpec{Name: "i-2-99-VM", Type: "User", MemoryMiB: 512}))
	held.armed.Store(true)
	crashed := make(chan struct{})
	go func() { defer close(crashed); assert.NoError(t, hv.Crash("i-2-99-VM", "CRASHED")) }()
	wait(t, held.entered, 10*time.Second, "the agent's out-of-band report")
	require.NoError(t, fault(c, func() error { return c.AgentStop("h1", false) }))
	killed := c.Rec.History().Len()
	close(held.release)
	wait(t, crashed, 10*time.Second, "the crash's callback's end")
	assert.Empty(t, after(c, killed, func(e history.Event) bool { return e.Actor == "agent/h1" }),
		"the killed agent spoke after the kill")
	noneRunning(t, "impl.(*Agent).") // the agent is not restarted: nothing of it runs
}
