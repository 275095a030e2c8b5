package live

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/csconform/csconform/impl"
)

// The hypervisor's host faults over its HTTP API: a guest that powers itself off (SHUTDOWN, then
// STOPPED/SHUTDOWN and the domain gone) and the router boot time; bad parameters are refused.
func TestHypervisorHostFaults(t *testing.T) {
	env := NewEnv()
	defer env.Close()
	h := NewFakeHost(env, "h1")
	var mu sync.Mutex
	var events []string
	h.Subscribe(func(ev impl.LifecycleEvent) {
		mu.Lock()
		events = append(events, ev.Event+"/"+ev.Detail)
		mu.Unlock()
	})
	srv := httptest.NewServer(HypervisorHandler(h))
	defer srv.Close()
	post := func(path string, q url.Values) (int, string) {
		resp, err := http.PostForm(srv.URL+path, q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp.StatusCode, b.String()
	}
	for _, c := range []struct {
		path string
		q    url.Values
		code int
		want string
	}{
		{"/routerBoot", url.Values{"d": {"soon"}}, http.StatusBadRequest, "not a duration"},
		{"/routerBoot", url.Values{"d": {"-1s"}}, http.StatusBadRequest, "not a duration"},
		{"/guestShutdown", url.Values{"name": {"nope"}}, http.StatusConflict, "not running"},
		{"/routerBoot", url.Values{"d": {"1h"}}, http.StatusOK, "1h0m0s"},
	} {
		if code, body := post(c.path, c.q); code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s %v: %d %s, want %d and %q", c.path, c.q, code, body, c.code, c.want)
		}
	}

	// a router with the boot set to an hour is not ready within a short wait; a user VM is
	if err := h.Start(impl.DomainSpec{Name: "r-1-VM", Type: "DomainRouter"}); err != nil {
		t.Fatal(err)
	}
	if err := h.WaitReady("r-1-VM", 2*time.Second); err == nil {
		t.Fatal("the router was ready although its boot was set to an hour")
	}
	if err := h.Start(impl.DomainSpec{Name: "i-2-2-VM", Type: "User"}); err != nil {
		t.Fatal(err)
	}
	if code, body := post("/guestShutdown", url.Values{"name": {"i-2-2-VM"}}); code != http.StatusOK {
		t.Fatalf("guestShutdown: %d %s", code, body)
	}
	eventually(t, 10*time.Second, "the guest to be reaped", func() bool {
		for _, d := range h.Domains() {
			if d.Name == "i-2-2-VM" {
				return false
			}
		}
		return true
	})
	mu.Lock()
	got := strings.Join(events, " ")
	mu.Unlock()
	if !strings.Contains(got, "SHUTDOWN/FINISHED STOPPED/SHUTDOWN") {
		t.Fatalf("lifecycle events %q, want SHUTDOWN/FINISHED then STOPPED/SHUTDOWN", got)
	}
	post("/routerBoot", url.Values{"d": {"0s"}})
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.routerBoot != 0 {
		t.Fatal("routerBoot 0 did not restore the default")
	}
}

// DialRemoteHost waits for a hypervisor process that is still starting: its socket served a moment
// after the agent dials.
func TestDialRemoteHostWaitsForTheHypervisor(t *testing.T) {
	env := NewEnv()
	defer env.Close()
	sock := filepath.Join(t.TempDir(), "h1.sock")
	served := make(chan net.Listener, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		ln, err := net.Listen("unix", sock)
		if err != nil {
			close(served)
			return
		}
		served <- ln
		http.Serve(ln, HypervisorHandler(NewFakeHost(env, "h1")))
	}()
	h, err := DialRemoteHost(env, sock)
	if ln := <-served; ln != nil {
		defer ln.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Ping(); err != nil {
		t.Fatal(err)
	}
}
