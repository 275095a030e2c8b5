package main

// The server's control endpoint: a few CloudStack-named commands as JSON over HTTP, parameters in the
// query string or a form body, every request with the server's control token, e.g.
//   curl -H "Authorization: Bearer $(cat TOKENFILE)" 'http://127.0.0.1:8096/deployVirtualMachine?networkids=1&hostid=h1'
// It is a driving handle for tests and people, not CloudStack's API (that is --api). It drives
// everything the server does, so it listens on loopback by default and answers only with the token.

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/job"
)

type control struct {
	srv *impl.Server
	db  *impl.DB
	cfg *impl.Config
}

type controlCmd struct {
	params string
	fn     func(r *http.Request) (any, error)
}

// newControl is the control endpoint; every request needs token (requireToken).
func newControl(srv *impl.Server, db *impl.DB, cfg *impl.Config, token string) http.Handler {
	c := &control{srv: srv, db: db, cfg: cfg}
	cmds := map[string]controlCmd{
		"createNetwork":         {"name [persistent=false] [poolsize=32]", c.createNetwork},
		"deployVirtualMachine":  {"networkids=1,2 [name] [hostid]", c.deploy},
		"startVirtualMachine":   {"id [hostid]", c.start},
		"stopVirtualMachine":    {"id [forced=false]", c.stop},
		"destroyVirtualMachine": {"id [expunge=false]", c.destroy},
		"expungeVirtualMachine": {"id", c.expunge},
		"queryAsyncJobResult":   {"jobid [wait=0s: wait up to this long for the job to finish]", c.queryJob},
		"listVirtualMachines":   {"", func(*http.Request) (any, error) { return c.db.VMs(nil), nil }},
		"listHosts":             {"", func(*http.Request) (any, error) { return c.db.Hosts(), nil }},
		"listNetworks":          {"", func(*http.Request) (any, error) { return c.db.Networks(nil), nil }},
		"snapshot":              {"(every record: hosts, vms, networks, nics' addresses, volumes, jobs, locks)", c.snapshot},
		"updateConfiguration":   {"name value", c.updateConfig},
		"backdateNetwork":       {"id by=DURATION (what operators do with UPDATE networks SET created = created - by)", c.backdateNetwork},
	}
	mux := http.NewServeMux()
	for name, cmd := range cmds {
		mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
			out, err := cmd.fn(r)
			if err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
				return
			}
			writeJSON(w, http.StatusOK, out)
		})
	}
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		list := map[string]string{}
		for name, cmd := range cmds {
			list["/"+name] = cmd.params
		}
		writeJSON(w, http.StatusOK, list)
	})
	return requireToken(token, mux)
}

// checkControlAddr refuses a control endpoint bound (at a) other than on loopback, unless any: the
// endpoint drives everything the server does, so it is for this machine only. flag is the --control
// value, as given.
func checkControlAddr(flag string, a net.Addr, any bool) error {
	if any {
		return nil
	}
	if ta, ok := a.(*net.TCPAddr); ok && ta.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--control %s (bound to %s) is not a loopback address: the control endpoint drives everything the server does; give a loopback address (127.0.0.1:PORT), or add --control-any-address to serve it beyond this machine", flag, a)
}

// envControlToken names the environment variable that gives the server its control token (and
// csconform hypervisor and csconform agent the token of their fault hooks).
const envControlToken = "CSCONFORM_CONTROL_TOKEN"

// envAgentKey names the environment variable that gives the server and its agents the agent key: the
// server takes an agent's StartupCommand only with it.
const envAgentKey = "CSCONFORM_AGENT_KEY"

// controlToken resolves the control token (of the server's control endpoint, and of the fault hooks
// of csconform hypervisor --listen and csconform agent --faults): $CSCONFORM_CONTROL_TOKEN; else the
// token in file if it exists; else a generated one, written to file (created 0600, never overwritten)
// or to a new 0600 file in the temporary directory. written names the file when the token was
// generated there (the process prints the path, never the token).
func controlToken(file string) (token, written string, err error) {
	return secret(envControlToken, file, "control token", true)
}

// agentKey resolves the agent key as controlToken does the control token, from $CSCONFORM_AGENT_KEY
// or file; the server generates one when there is none (generate), an agent cannot.
func agentKey(file string, generate bool) (key, written string, err error) {
	return secret(envAgentKey, file, "agent key", generate)
}

// secret resolves a shared secret named what: $env; else the secret in file if it exists; else, with
// generate, a generated one written to file (created 0600, never overwritten) or to a new 0600 file in
// the temporary directory, whose name is written; without generate, an error.
func secret(env, file, what string, generate bool) (s, written string, err error) {
	if t := os.Getenv(env); t != "" {
		return t, "", checkSecret(t, "$"+env, what)
	}
	if file != "" {
		b, err := readSecretFile(file)
		if err == nil {
			t := strings.TrimSpace(string(b))
			return t, "", checkSecret(t, what+" file "+file, what)
		}
		if !errors.Is(err, os.ErrNotExist) || !generate {
			return "", "", fmt.Errorf("%s file %s: %w", what, file, err)
		}
	}
	if !generate {
		return "", "", fmt.Errorf("no %s: set $%s or give its file", what, env)
	}
	t := randomKey()
	var f *os.File
	if file == "" {
		first, last, _ := strings.Cut(what, " ")
		f, err = os.CreateTemp("", "csconform-"+first+"-*."+last) // 0600: csconform-control-*.token, csconform-agent-*.key
	} else {
		f, err = os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
	if err != nil {
		return "", "", fmt.Errorf("%s file: %w", what, err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, t); err != nil {
		return "", "", fmt.Errorf("%s file: %w", what, err)
	}
	return t, f.Name(), nil
}

// maxSecretFile caps what the server reads from a control token or API keys file: a token or a key
// pair takes a few hundred bytes.
const maxSecretFile = 4 << 10

// readSecretFile reads a small file of secrets, refusing one longer than maxSecretFile (found from its
// size when it is a regular file, else after reading one byte past the cap: /dev/zero, a pipe). Its
// errors do not name the file: the caller does.
func readSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	tooBig := fmt.Errorf("longer than the cap of %d KiB", maxSecretFile>>10)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > maxSecretFile {
		return nil, tooBig
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if len(b) > maxSecretFile {
		return nil, tooBig
	}
	return b, nil
}

// unwrapPath drops the path an *fs.PathError carries (the caller names the file once).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// checkToken refuses control tokens that are easy to guess or cannot travel in a header.
func checkToken(t, where string) error { return checkSecret(t, where, "control token") }

// checkSecret refuses secrets that are easy to guess or cannot travel in a header.
func checkSecret(t, where, what string) error {
	if len(t) < 16 {
		return fmt.Errorf("%s: the %s needs at least 16 characters", where, what)
	}
	for _, c := range []byte(t) {
		if c <= ' ' || c >= 0x7f {
			return fmt.Errorf("%s: the %s is printable ASCII without spaces", where, what)
		}
	}
	return nil
}

// requireToken answers 401 to any request without "Authorization: Bearer TOKEN". Neither the token
// nor what was sent instead is ever logged or echoed.
func requireToken(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		var why string
		switch {
		case r.Header.Get("Authorization") == "":
			why = "no control token: send the header Authorization: Bearer TOKEN (the process's $" + envControlToken +
				", its --control-token-file, or the file it printed at start)"
		case !strings.EqualFold(scheme, "Bearer"):
			why = "the control token goes in the header Authorization: Bearer TOKEN"
		case subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) != 1:
			why = "wrong control token"
		default:
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="csconform control"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": why})
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func intParam(r *http.Request, name string) (int64, error) {
	v := r.FormValue(name)
	if v == "" {
		return 0, fmt.Errorf("parameter %s is required", name)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parameter %s: %q is not a number", name, v)
	}
	return n, nil
}

func boolParam(r *http.Request, name string) (bool, error) {
	v := r.FormValue(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("parameter %s: %q is not a boolean", name, v)
	}
	return b, nil
}

// vmParam reads id and checks the VM exists.
func (c *control) vmParam(r *http.Request) (int64, error) {
	id, err := intParam(r, "id")
	if err != nil {
		return 0, err
	}
	if v := c.db.VM(id); v == nil || v.Removed {
		return 0, fmt.Errorf("no virtual machine with id %d", id)
	}
	return id, nil
}

func (c *control) hostParam(r *http.Request) (string, error) {
	h := r.FormValue("hostid")
	if h != "" && c.db.Host(h) == nil {
		return "", fmt.Errorf("no host %q", h)
	}
	return h, nil
}

func (c *control) createNetwork(r *http.Request) (any, error) {
	name := r.FormValue("name")
	if name == "" {
		return nil, fmt.Errorf("parameter name is required")
	}
	persistent, err := boolParam(r, "persistent")
	if err != nil {
		return nil, err
	}
	pool := int64(32)
	if r.FormValue("poolsize") != "" {
		if pool, err = intParam(r, "poolsize"); err != nil {
			return nil, err
		}
	}
	if pool < 1 || pool > 240 {
		return nil, fmt.Errorf("parameter poolsize: %d is not in 1..240", pool)
	}
	return c.srv.NewNetwork(name, persistent, int(pool))
}

func (c *control) deploy(r *http.Request) (any, error) {
	var nets []int64
	for _, s := range strings.Split(r.FormValue("networkids"), ",") {
		if s == "" {
			continue
		}
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parameter networkids: %q is not a number", s)
		}
		if c.db.Network(id) == nil {
			return nil, fmt.Errorf("no network with id %d", id)
		}
		nets = append(nets, id)
	}
	if len(nets) == 0 {
		return nil, fmt.Errorf("parameter networkids is required")
	}
	h, err := c.hostParam(r)
	if err != nil {
		return nil, err
	}
	v, j := c.srv.DeployVirtualMachine(r.FormValue("name"), nets, h)
	return map[string]any{"vm": v, "jobid": j.ID}, nil
}

func jobOut(j *impl.JobVO) (any, error) { return map[string]any{"jobid": j.ID}, nil }

func (c *control) start(r *http.Request) (any, error) {
	id, err := c.vmParam(r)
	if err != nil {
		return nil, err
	}
	h, err := c.hostParam(r)
	if err != nil {
		return nil, err
	}
	return jobOut(c.srv.StartVirtualMachine(id, h))
}

func (c *control) stop(r *http.Request) (any, error) {
	id, err := c.vmParam(r)
	if err != nil {
		return nil, err
	}
	forced, err := boolParam(r, "forced")
	if err != nil {
		return nil, err
	}
	return jobOut(c.srv.StopVirtualMachine(id, forced))
}

func (c *control) destroy(r *http.Request) (any, error) {
	id, err := c.vmParam(r)
	if err != nil {
		return nil, err
	}
	expunge, err := boolParam(r, "expunge")
	if err != nil {
		return nil, err
	}
	return jobOut(c.srv.DestroyVirtualMachine(id, expunge))
}

func (c *control) expunge(r *http.Request) (any, error) {
	id, err := c.vmParam(r)
	if err != nil {
		return nil, err
	}
	return jobOut(c.srv.ExpungeVirtualMachine(id))
}

// queryJob returns the job row; with wait it polls the record (every 100 ms) until the job is done or
// wait has passed, whichever is first — the answer then says whatever the job is at that moment.
func (c *control) queryJob(r *http.Request) (any, error) {
	id, err := intParam(r, "jobid")
	if err != nil {
		return nil, err
	}
	var wait time.Duration
	if v := r.FormValue("wait"); v != "" {
		if wait, err = time.ParseDuration(v); err != nil || wait < 0 || wait > 10*time.Minute {
			return nil, fmt.Errorf("parameter wait: %q is not a duration in 0..10m", v)
		}
	}
	deadline := time.Now().Add(wait)
	for {
		j := c.db.Job(id)
		if j == nil {
			return nil, fmt.Errorf("no job with id %d", id)
		}
		if j.Status.Done() || !time.Now().Before(deadline) {
			return map[string]any{"job": j, "done": j.Status.Done(), "succeeded": j.Status == job.Succeeded}, nil
		}
		select {
		case <-r.Context().Done():
			return nil, r.Context().Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *control) snapshot(*http.Request) (any, error) {
	ips := map[string][]impl.IPHolder{}
	nets := c.db.Networks(nil)
	for _, n := range nets {
		ips[strconv.FormatInt(n.ID, 10)] = c.db.IPPool(n.ID)
	}
	return map[string]any{
		"time": time.Now().UTC(), "hosts": c.db.Hosts(), "vms": c.db.VMs(nil), "networks": nets, "ips": ips,
		"volumes": c.db.Volumes(0), "jobs": c.db.Jobs(nil), "locks": c.db.Locks(),
	}, nil
}

func (c *control) updateConfig(r *http.Request) (any, error) {
	name, value := r.FormValue("name"), r.FormValue("value")
	if err := c.cfg.Set(name, value); err != nil {
		return nil, err
	}
	return map[string]string{"name": name, "value": c.cfg.Get(name)}, nil
}

// backdateNetwork moves a network's created time back: CloudStack has no API for it, operators (and
// the seed 000 A/B) run UPDATE networks SET created = created - INTERVAL … on the database.
func (c *control) backdateNetwork(r *http.Request) (any, error) {
	id, err := intParam(r, "id")
	if err != nil {
		return nil, err
	}
	by, err := time.ParseDuration(r.FormValue("by"))
	if err != nil || by < 0 {
		return nil, fmt.Errorf("parameter by: %q is not a duration of 0 or more", r.FormValue("by"))
	}
	n := c.db.Network(id)
	if n == nil {
		return nil, fmt.Errorf("no network with id %d", id)
	}
	if err := c.db.SetNetworkCreated(id, n.Created.Add(-by)); err != nil {
		return nil, err
	}
	return c.db.Network(id), nil
}
