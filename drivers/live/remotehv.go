package live

// A FakeHost in a process of its own (csconform hypervisor), reached by agents over HTTP on a unix
// socket, as cloudstack-agent reaches libvirtd through /var/run/libvirt/libvirt-sock. The domains
// live in the hypervisor process, so an agent that is stopped, killed or paused leaves them running,
// and the truth for the invariants is read from the hypervisor (GET /domains), never from the agent.
//
//	POST /start        body: impl.DomainSpec
//	POST /waitReady    ?name=&timeout=
//	POST /stop         ?name=
//	GET  /running      sorted names of the powered-on domains
//	POST /deleteVolume ?path=
//	GET  /events       lifecycle events as JSON lines, for as long as the caller stays connected
//	GET  /domains      the truth: running domains with their IPs and disks (read only)
//	POST /crash        ?name=&detail=FAILED   a fault: the domain's "QEMU" dies
//	POST /guestShutdown ?name=                a fault: the guest powers itself off
//	POST /routerBoot   ?d=DURATION            routers created from now on take d to boot (0: default)

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/csconform/csconform/impl"
)

// HypervisorHandler serves h. Lifecycle events go to every connected /events stream; one emitted
// while no agent is connected is lost, as libvirt's are when no client is registered.
func HypervisorHandler(h *FakeHost) http.Handler {
	var mu sync.Mutex
	streams := map[chan impl.LifecycleEvent]struct{}{}
	h.Subscribe(func(ev impl.LifecycleEvent) {
		mu.Lock()
		defer mu.Unlock()
		for ch := range streams {
			select {
			case ch <- ev:
			default: // a client hopelessly behind loses events
			}
		}
	})
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /start", func(w http.ResponseWriter, r *http.Request) {
		var spec impl.DomainSpec
		if err := json.NewDecoder(r.Body).Decode(&spec); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		reply(w, "ok", h.Start(spec))
	})
	mux.HandleFunc("POST /waitReady", func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.FormValue("timeout"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		reply(w, "ok", h.WaitReady(r.FormValue("name"), d))
	})
	mux.HandleFunc("POST /stop", func(w http.ResponseWriter, r *http.Request) { reply(w, "ok", h.Stop(r.FormValue("name"))) })
	mux.HandleFunc("GET /running", func(w http.ResponseWriter, r *http.Request) { reply(w, h.Running(), nil) })
	mux.HandleFunc("POST /deleteVolume", func(w http.ResponseWriter, r *http.Request) {
		reply(w, "ok", h.DeleteVolume(r.FormValue("path")))
	})
	mux.HandleFunc("GET /domains", func(w http.ResponseWriter, r *http.Request) { reply(w, h.Domains(), nil) })
	mux.HandleFunc("POST /crash", func(w http.ResponseWriter, r *http.Request) {
		detail := r.FormValue("detail")
		if detail == "" {
			detail = "FAILED"
		}
		reply(w, "ok", h.Crash(r.FormValue("name"), detail))
	})
	mux.HandleFunc("POST /guestShutdown", func(w http.ResponseWriter, r *http.Request) {
		reply(w, "ok", h.GuestShutdown(r.FormValue("name")))
	})
	mux.HandleFunc("POST /routerBoot", func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.FormValue("d"))
		if err != nil || d < 0 {
			http.Error(w, fmt.Sprintf("parameter d: %q is not a duration of 0 or more", r.FormValue("d")), http.StatusBadRequest)
			return
		}
		h.SetRouterBoot(d)
		reply(w, map[string]string{"routerBoot": d.String()}, nil)
	})
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		ch := make(chan impl.LifecycleEvent, 1024)
		mu.Lock()
		streams[ch] = struct{}{}
		mu.Unlock()
		defer func() { mu.Lock(); delete(streams, ch); mu.Unlock() }()
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		fl, _ := w.(http.Flusher)
		if fl != nil {
			fl.Flush()
		}
		enc := json.NewEncoder(w)
		for {
			select {
			case ev := <-ch:
				if enc.Encode(ev) != nil {
					return
				}
				if fl != nil {
					fl.Flush()
				}
			case <-r.Context().Done():
				return
			}
		}
	})
	return mux
}

// RemoteHost is impl.Hypervisor on a hypervisor process reached over a unix socket.
type RemoteHost struct {
	env    impl.Env
	socket string
	c      *http.Client
}

// NewRemoteHost returns the hypervisor served on the unix socket path; calls run on env.
func NewRemoteHost(env impl.Env, socket string) *RemoteHost {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return &RemoteHost{env: env, socket: socket, c: &http.Client{Transport: tr}}
}

// DialRemoteHost is NewRemoteHost once the hypervisor answers: a process started beside the agent
// (csconform hypervisor) may still be starting, so it is pinged for up to 5 s.
func DialRemoteHost(env impl.Env, socket string) (*RemoteHost, error) {
	h := NewRemoteHost(env, socket)
	var err error
	for i := 0; i < 50; i++ {
		if err = h.Ping(); err == nil {
			return h, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, err
}

// Ping checks that the hypervisor answers.
func (h *RemoteHost) Ping() error {
	_, err := h.call("GET", "/running", nil, nil)
	return err
}

func (h *RemoteHost) call(method, path string, q url.Values, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	u := "http://hv" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return nil, err
	}
	resp, err := h.c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("hypervisor at %s: %v", h.socket, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return nil, fmt.Errorf("%s", e.Error)
		}
		return nil, fmt.Errorf("hypervisor: %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return b, nil
}

func (h *RemoteHost) Start(spec impl.DomainSpec) error {
	_, err := h.call("POST", "/start", nil, spec)
	return err
}

func (h *RemoteHost) WaitReady(name string, timeout time.Duration) error {
	_, err := h.call("POST", "/waitReady", url.Values{"name": {name}, "timeout": {timeout.String()}}, nil)
	return err
}

func (h *RemoteHost) Stop(name string) error {
	_, err := h.call("POST", "/stop", url.Values{"name": {name}}, nil)
	return err
}

// Running lists the powered-on domains; nil if the hypervisor cannot be reached (libvirt's agent
// then reports nothing too, and the server's graceful period decides).
func (h *RemoteHost) Running() []string {
	b, err := h.call("GET", "/running", nil, nil)
	if err != nil {
		return nil
	}
	var names []string
	json.Unmarshal(b, &names)
	return names
}

func (h *RemoteHost) DeleteVolume(path string) error {
	_, err := h.call("POST", "/deleteVolume", url.Values{"path": {path}}, nil)
	return err
}

// Subscribe follows the hypervisor's event stream on a task of env, reconnecting when it breaks.
func (h *RemoteHost) Subscribe(fn func(impl.LifecycleEvent)) {
	h.env.Go("hv-events", func() {
		for {
			resp, err := h.c.Get("http://hv/events")
			if err == nil {
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					var ev impl.LifecycleEvent
					if json.Unmarshal(sc.Bytes(), &ev) == nil {
						fn(ev)
					}
				}
				resp.Body.Close()
			}
			h.env.Sleep(time.Second)
		}
	})
}

var _ impl.Hypervisor = (*RemoteHost)(nil)
