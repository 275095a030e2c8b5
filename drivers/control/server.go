package control

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/job"
)

// endpoint is the control endpoint's commands over one server.
type endpoint struct {
	srv *impl.Server
	db  *impl.DB
	cfg *impl.Config
}

type controlCmd struct {
	params string
	fn     func(r *http.Request) (any, error)
}

// Handler is the control endpoint of the server srv (its db and cfg); every request needs token
// (RequireToken).
func Handler(srv *impl.Server, db *impl.DB, cfg *impl.Config, token string) http.Handler {
	c := &endpoint{srv: srv, db: db, cfg: cfg}
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
			// as the API (cloudapi): run only on a database the disk holds, succeed only if it still does
			if err := db.Durable(); err != nil {
				WriteJSON(w, DBErrorStatus, map[string]string{"error": "DB Exception on: " + err.Error()})
				return
			}
			out, err := cmd.fn(r)
			if derr := db.Durable(); derr != nil {
				WriteJSON(w, DBErrorStatus, map[string]string{"error": "DB Exception on: " + derr.Error()})
				return
			}
			if err != nil {
				WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
				return
			}
			WriteJSON(w, http.StatusOK, out)
		})
	}
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		list := map[string]string{}
		for name, cmd := range cmds {
			list["/"+name] = cmd.params
		}
		WriteJSON(w, http.StatusOK, list)
	})
	return RequireToken(token, mux)
}

// DBErrorStatus is the status of an answer refused because the database cannot be written: 530, as
// CloudStack's API answers an internal error.
const DBErrorStatus = 530

// CheckAddr refuses a control endpoint bound (at a) other than on loopback, unless any: the
// endpoint drives everything the server does, so it is for this machine only. flag is the --control
// value, as given.
func CheckAddr(flag string, a net.Addr, any bool) error {
	if any {
		return nil
	}
	if ta, ok := a.(*net.TCPAddr); ok && ta.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--control %s (bound to %s) is not a loopback address: the control endpoint drives everything the server does; give a loopback address (127.0.0.1:PORT), or add --control-any-address to serve it beyond this machine", flag, a)
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
func (c *endpoint) vmParam(r *http.Request) (int64, error) {
	id, err := intParam(r, "id")
	if err != nil {
		return 0, err
	}
	if v := c.db.VM(id); v == nil || v.Removed {
		return 0, fmt.Errorf("no virtual machine with id %d", id)
	}
	return id, nil
}

func (c *endpoint) hostParam(r *http.Request) (string, error) {
	h := r.FormValue("hostid")
	if h != "" && c.db.Host(h) == nil {
		return "", fmt.Errorf("no host %q", h)
	}
	return h, nil
}

func (c *endpoint) createNetwork(r *http.Request) (any, error) {
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

func (c *endpoint) deploy(r *http.Request) (any, error) {
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

func (c *endpoint) start(r *http.Request) (any, error) {
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

func (c *endpoint) stop(r *http.Request) (any, error) {
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

func (c *endpoint) destroy(r *http.Request) (any, error) {
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

func (c *endpoint) expunge(r *http.Request) (any, error) {
	id, err := c.vmParam(r)
	if err != nil {
		return nil, err
	}
	return jobOut(c.srv.ExpungeVirtualMachine(id))
}

// queryJob returns the job row; with wait it polls the record (every 100 ms) until the job is done or
// wait has passed, whichever is first — the answer then says whatever the job is at that moment.
func (c *endpoint) queryJob(r *http.Request) (any, error) {
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

func (c *endpoint) snapshot(*http.Request) (any, error) {
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

func (c *endpoint) updateConfig(r *http.Request) (any, error) {
	name, value := r.FormValue("name"), r.FormValue("value")
	if err := c.cfg.Set(name, value); err != nil {
		return nil, err
	}
	return map[string]string{"name": name, "value": c.cfg.Get(name)}, nil
}

// backdateNetwork moves a network's created time back: CloudStack has no API for it, operators (and
// the seed 000 A/B) run UPDATE networks SET created = created - INTERVAL … on the database.
func (c *endpoint) backdateNetwork(r *http.Request) (any, error) {
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
