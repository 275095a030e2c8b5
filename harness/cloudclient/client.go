// Package cloudclient performs the harness's client operations — createNetwork, deploy, start (and
// the boot-group start), stop, forced stop, destroy with or without expunge, expunge, the lists —
// through github.com/apache/cloudstack-go, against any CloudStack API endpoint: csconform's own API
// face (impl/cloudapi) or a real CloudStack.
//
// Async commands return a job id at once; Wait polls queryAsyncJobResult as cloudstack-go's
// GetAsyncJobResult does, but on the caller's clock (Options.Sleep) and riding out a management
// server that is briefly unreachable (a restart), since the job outlives the connection.
//
// The secret key only ever goes to cloudstack-go, which signs with it; it is in no error, log line or
// String of this package.
package cloudclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
)

// Options say where the API is and how to wait.
type Options struct {
	URL       string // e.g. http://127.0.0.1:8080/client/api
	APIKey    string
	SecretKey string
	// Zone, ServiceOffering, Template and NetworkOffering (isolated, not persistent) to deploy with,
	// by id or name; "" takes the first usable one the API lists.
	Zone, ServiceOffering, Template, NetworkOffering string
	// Sleep waits between polls (default time.Sleep); Now reads the same clock (default time.Now).
	Sleep func(time.Duration)
	Now   func() time.Time
	// Poll is the queryAsyncJobResult period (default 1 s); JobTimeout bounds Wait (default 1 h);
	// Unreachable is how long Wait rides out connection errors (default 10 min).
	Poll, JobTimeout, Unreachable time.Duration
	// Ctx, when cancelled, ends Wait (Ctrl-C); nil: never.
	Ctx context.Context
	// Insecure: do not verify the API's TLS certificate.
	Insecure bool
}

// String never shows the secret.
func (o Options) String() string {
	return fmt.Sprintf("cloudclient{url=%s apiKey=%s secretKey=<hidden>}", o.URL, o.APIKey)
}

// GoString never shows the secret either.
func (o Options) GoString() string { return o.String() }

// Client is one API user.
type Client struct {
	CS *cs.CloudStackClient
	o  Options

	mu                           sync.Mutex
	zone, template, offering     string
	netOffering, persistentNetOf string
	chosen                       string
	hosts                        map[string]string // host name -> id
}

// New returns a client; nothing is sent until the first call.
func New(o Options) *Client {
	if o.Sleep == nil {
		o.Sleep = time.Sleep
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.JobTimeout <= 0 {
		o.JobTimeout = time.Hour
	}
	if o.Unreachable <= 0 {
		o.Unreachable = 10 * time.Minute
	}
	return &Client{CS: cs.NewClient(o.URL, o.APIKey, o.SecretKey, !o.Insecure), o: o, hosts: map[string]string{}}
}

// JobError is a failed async job: jobresultcode and the jobresult's cserrorcode and errortext.
type JobError struct {
	JobID  string
	Code   int
	CSCode int
	Text   string
}

func (e *JobError) Error() string {
	return fmt.Sprintf("job %s failed: CloudStack API error %d (CSExceptionErrorCode: %d): %s", e.JobID, e.Code, e.CSCode, e.Text)
}

// discover finds the zone, template, service offering and network offerings to deploy with: the ones
// Options name (by id or name), else the first usable of each (csconform's API face has exactly one).
func (c *Client) discover() error {
	c.mu.Lock()
	done := c.zone != ""
	c.mu.Unlock()
	if done {
		return nil
	}
	z, err := c.CS.Zone.ListZones(c.CS.Zone.NewListZonesParams())
	if err != nil {
		return err
	}
	so, err := c.CS.ServiceOffering.ListServiceOfferings(c.CS.ServiceOffering.NewListServiceOfferingsParams())
	if err != nil {
		return err
	}
	tp, err := c.CS.Template.ListTemplates(c.CS.Template.NewListTemplatesParams("executable"))
	if err != nil {
		return err
	}
	no, err := c.CS.NetworkOffering.ListNetworkOfferings(c.CS.NetworkOffering.NewListNetworkOfferingsParams())
	if err != nil {
		return err
	}
	pick := func(what, want string, ids, names []string, usable []bool) (string, string, error) {
		for i := range ids {
			if want == "" && usable[i] || want != "" && (ids[i] == want || names[i] == want) {
				return ids[i], names[i], nil
			}
		}
		if want != "" {
			return "", "", fmt.Errorf("the API lists no %s %q (it lists: %s)", what, want, strings.Join(names, ", "))
		}
		return "", "", fmt.Errorf("the API lists no usable %s to deploy with", what)
	}
	var ids, names []string
	var ok []bool
	for _, x := range z.Zones {
		ids, names, ok = append(ids, x.Id), append(names, x.Name), append(ok, x.Allocationstate != "Disabled")
	}
	zone, zoneName, err := pick("zone", c.o.Zone, ids, names, ok)
	if err != nil {
		return err
	}
	ids, names, ok = nil, nil, nil
	for _, x := range so.ServiceOfferings {
		ids, names, ok = append(ids, x.Id), append(names, x.Name), append(ok, true)
	}
	off, offName, err := pick("service offering", c.o.ServiceOffering, ids, names, ok)
	if err != nil {
		return err
	}
	ids, names, ok = nil, nil, nil
	for _, x := range tp.Templates {
		ids, names, ok = append(ids, x.Id), append(names, x.Name), append(ok, x.Isready && (x.Zoneid == "" || x.Zoneid == zone))
	}
	tmpl, tmplName, err := pick("template", c.o.Template, ids, names, ok)
	if err != nil {
		return err
	}
	var netOf, netOfName, pnetOf string
	ids, names, ok = nil, nil, nil
	for _, x := range no.NetworkOfferings {
		usable := x.Guestiptype == "Isolated" && x.State != "Disabled"
		if usable && x.Ispersistent && pnetOf == "" {
			pnetOf = x.Id
		}
		ids, names, ok = append(ids, x.Id), append(names, x.Name), append(ok, usable && !x.Ispersistent)
	}
	if netOf, netOfName, err = pick("isolated network offering", c.o.NetworkOffering, ids, names, ok); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.zone, c.offering, c.template, c.netOffering, c.persistentNetOf = zone, off, tmpl, netOf, pnetOf
	c.chosen = fmt.Sprintf("zone %s, service offering %s, template %s, network offering %s", zoneName, offName, tmplName, netOfName)
	return nil
}

// Discover picks the zone, service offering, template and network offerings now (see Options) and
// says which, by name.
func (c *Client) Discover() (string, error) {
	if err := c.discover(); err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.chosen, nil
}

// SetDefaults picks the zone, template, service offering and network offerings by id.
func (c *Client) SetDefaults(zone, template, offering, netOffering, persistentNetOffering string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.zone, c.template, c.offering, c.netOffering, c.persistentNetOf = zone, template, offering, netOffering, persistentNetOffering
}

// CreateNetwork is createNetwork of an isolated network (persistent or not); it returns its id.
func (c *Client) CreateNetwork(name string, persistent bool) (string, error) {
	if err := c.discover(); err != nil {
		return "", err
	}
	off := c.netOffering
	if persistent {
		off = c.persistentNetOf
	}
	if off == "" {
		return "", fmt.Errorf("no isolated network offering with ispersistent=%v", persistent)
	}
	p := c.CS.Network.NewCreateNetworkParams(name, off, c.zone)
	p.SetDisplaytext(name)
	n, err := c.CS.Network.CreateNetwork(p)
	if err != nil {
		return "", err
	}
	return n.Id, nil
}

// HostID resolves a host's name ("" stays "").
func (c *Client) HostID(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	c.mu.Lock()
	id, ok := c.hosts[name]
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	p := c.CS.Host.NewListHostsParams()
	p.SetName(name)
	l, err := c.CS.Host.ListHosts(p)
	if err != nil {
		return "", err
	}
	for _, h := range l.Hosts {
		if h.Name == name {
			c.mu.Lock()
			c.hosts[name] = h.Id
			c.mu.Unlock()
			return h.Id, nil
		}
	}
	return "", fmt.Errorf("no host named %q", name)
}

// Deploy is deployVirtualMachine into networks (ids), on a host (name, or "" for any); start=false is
// startvm=false. It returns the VM's id and the job's.
func (c *Client) Deploy(displayName string, networks []string, host string, start bool) (string, string, error) {
	if err := c.discover(); err != nil {
		return "", "", err
	}
	p := c.CS.VirtualMachine.NewDeployVirtualMachineParams(c.offering, c.template, c.zone)
	p.SetNetworkids(networks)
	if displayName != "" {
		p.SetDisplayname(displayName)
	}
	if !start {
		p.SetStartvm(false)
	}
	if host != "" {
		id, err := c.HostID(host)
		if err != nil {
			return "", "", err
		}
		p.SetHostid(id)
	}
	r, err := c.CS.VirtualMachine.DeployVirtualMachine(p)
	if err != nil {
		return "", "", err
	}
	return r.Id, r.JobID, nil
}

// StartOnceCommand is csconform's extension for the boot-group start (advanceStart once, no retry);
// a real CloudStack does not have it.
const StartOnceCommand = "startVirtualMachineOnce"

// Start is startVirtualMachine (once: the boot-group path, csconform's API face only).
func (c *Client) Start(vm, host string, once bool) (string, error) {
	hid, err := c.HostID(host)
	if err != nil {
		return "", err
	}
	if once {
		p := &cs.CustomServiceParams{}
		p.SetParam("id", vm)
		if hid != "" {
			p.SetParam("hostid", hid)
		}
		var r struct {
			JobID string `json:"jobid"`
		}
		custom, ok := c.CS.Custom.(*cs.CustomService)
		if !ok {
			return "", errors.New("cloudstack-go has no custom request service")
		}
		if err := custom.CustomRequest(StartOnceCommand, p, &r); err != nil {
			return "", err
		}
		return r.JobID, nil
	}
	p := c.CS.VirtualMachine.NewStartVirtualMachineParams(vm)
	if hid != "" {
		p.SetHostid(hid)
	}
	r, err := c.CS.VirtualMachine.StartVirtualMachine(p)
	if err != nil {
		return "", err
	}
	return r.JobID, nil
}

// Stop is stopVirtualMachine (forced=true for the forced stop).
// VMOp starts a scenario's operation kind on a VM (start, startNoRetry, stop, forceStop, destroy,
// destroyExpunge, expunge, migrate, recover) and returns its job: the one mapping of the kinds to CloudStack's API.
func (c *Client) VMOp(kind, vm, host string) (string, error) {
	switch kind {
	case "start", "startNoRetry":
		return c.Start(vm, host, kind == "startNoRetry")
	case "stop", "forceStop":
		return c.Stop(vm, kind == "forceStop")
	case "destroy", "destroyExpunge":
		return c.Destroy(vm, kind == "destroyExpunge")
	case "expunge":
		return c.Expunge(vm)
	case "migrate":
		return c.Migrate(vm, host)
	case "recover":
		return "", c.Recover(vm)
	}
	return "", fmt.Errorf("unknown operation %q", kind)
}

// Migrate is migrateVirtualMachine (virtualmachineid, hostid: the destination).
func (c *Client) Migrate(vm, host string) (string, error) {
	hid, err := c.HostID(host)
	if err != nil {
		return "", err
	}
	p := c.CS.VirtualMachine.NewMigrateVirtualMachineParams(vm)
	if hid != "" {
		p.SetHostid(hid)
	}
	r, err := c.CS.VirtualMachine.MigrateVirtualMachine(p)
	if err != nil {
		return "", err
	}
	return r.JobID, nil
}

// Recover is recoverVirtualMachine: a synchronous command (RecoverVMCmd is a BaseCmd), so it has no
// job; VMOp answers "" for it, which Wait takes as done.
func (c *Client) Recover(vm string) error {
	_, err := c.CS.VirtualMachine.RecoverVirtualMachine(c.CS.VirtualMachine.NewRecoverVirtualMachineParams(vm))
	return err
}

func (c *Client) Stop(vm string, forced bool) (string, error) {
	p := c.CS.VirtualMachine.NewStopVirtualMachineParams(vm)
	if forced {
		p.SetForced(true)
	}
	r, err := c.CS.VirtualMachine.StopVirtualMachine(p)
	if err != nil {
		return "", err
	}
	return r.JobID, nil
}

// Destroy is destroyVirtualMachine (expunge=true expunges at once).
func (c *Client) Destroy(vm string, expunge bool) (string, error) {
	p := c.CS.VirtualMachine.NewDestroyVirtualMachineParams(vm)
	if expunge {
		p.SetExpunge(true)
	}
	r, err := c.CS.VirtualMachine.DestroyVirtualMachine(p)
	if err != nil {
		return "", err
	}
	return r.JobID, nil
}

// DeleteNetwork is deleteNetwork; it returns the job's id.
func (c *Client) DeleteNetwork(id string) (string, error) {
	r, err := c.CS.Network.DeleteNetwork(c.CS.Network.NewDeleteNetworkParams(id))
	if err != nil {
		return "", err
	}
	return r.JobID, nil
}

// Expunge is expungeVirtualMachine.
func (c *Client) Expunge(vm string) (string, error) {
	r, err := c.CS.VirtualMachine.ExpungeVirtualMachine(c.CS.VirtualMachine.NewExpungeVirtualMachineParams(vm))
	if err != nil {
		return "", err
	}
	return r.JobID, nil
}

// Wait polls the job until it is done: nil on success, a *JobError on failure.
func (c *Client) Wait(jobID string) error {
	if jobID == "" {
		return nil // a synchronous command's (Recover): done when it answered
	}
	start := c.o.Now()
	var unreachableSince time.Time
	for {
		if c.o.Ctx != nil && c.o.Ctx.Err() != nil {
			return fmt.Errorf("job %s: stopped waiting: %w", jobID, c.o.Ctx.Err())
		}
		r, err := c.CS.Asyncjob.QueryAsyncJobResult(c.CS.Asyncjob.NewQueryAsyncJobResultParams(jobID))
		switch {
		case err != nil && transient(err):
			if unreachableSince.IsZero() {
				unreachableSince = c.o.Now()
			}
			if c.o.Now().Sub(unreachableSince) > c.o.Unreachable {
				return err
			}
		case err != nil:
			return err
		case r.Jobstatus == 1:
			return nil
		case r.Jobstatus == 2:
			e := &JobError{JobID: jobID, Code: r.Jobresultcode}
			var res cs.CSError
			if json.Unmarshal(r.Jobresult, &res) == nil && res.ErrorText != "" {
				e.CSCode, e.Text = res.CSErrorCode, res.ErrorText
				if res.ErrorCode != 0 {
					e.Code = res.ErrorCode
				}
			} else {
				e.Text = strings.Trim(string(r.Jobresult), `"`)
			}
			return e
		default:
			unreachableSince = time.Time{}
		}
		if c.o.Now().Sub(start) > c.o.JobTimeout {
			return fmt.Errorf("job %s still running after %s", jobID, c.o.JobTimeout)
		}
		c.o.Sleep(c.o.Poll)
	}
}

// transient: the server could not be reached (restarting), as opposed to an answer.
func transient(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) || strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "EOF")
}

// VM reads one VM by id.
func (c *Client) VM(id string) (*cs.VirtualMachine, error) {
	p := c.CS.VirtualMachine.NewListVirtualMachinesParams()
	p.SetId(id)
	l, err := c.CS.VirtualMachine.ListVirtualMachines(p)
	if err != nil {
		return nil, err
	}
	if l.Count != 1 {
		return nil, fmt.Errorf("no VM %s", id)
	}
	return l.VirtualMachines[0], nil
}

// VMs lists the VMs (not expunged).
func (c *Client) VMs() ([]*cs.VirtualMachine, error) {
	l, err := c.CS.VirtualMachine.ListVirtualMachines(c.CS.VirtualMachine.NewListVirtualMachinesParams())
	if err != nil {
		return nil, err
	}
	return l.VirtualMachines, nil
}

// Networks lists the networks.
func (c *Client) Networks() ([]*cs.Network, error) {
	l, err := c.CS.Network.ListNetworks(c.CS.Network.NewListNetworksParams())
	if err != nil {
		return nil, err
	}
	return l.Networks, nil
}

// Nics lists a VM's NICs.
func (c *Client) Nics(vm string) ([]*cs.Nic, error) {
	l, err := c.CS.Nic.ListNics(c.CS.Nic.NewListNicsParams(vm))
	if err != nil {
		return nil, err
	}
	return l.Nics, nil
}

// Volumes lists a VM's volumes ("" for all).
func (c *Client) Volumes(vm string) ([]*cs.Volume, error) {
	p := c.CS.Volume.NewListVolumesParams()
	if vm != "" {
		p.SetVirtualmachineid(vm)
	}
	l, err := c.CS.Volume.ListVolumes(p)
	if err != nil {
		return nil, err
	}
	return l.Volumes, nil
}

// Hosts lists the hosts.
func (c *Client) Hosts() ([]*cs.Host, error) {
	l, err := c.CS.Host.ListHosts(c.CS.Host.NewListHostsParams())
	if err != nil {
		return nil, err
	}
	return l.Hosts, nil
}

// SetConfig is updateConfiguration.
func (c *Client) SetConfig(name, value string) error {
	p := c.CS.Configuration.NewUpdateConfigurationParams(name)
	p.SetValue(value)
	_, err := c.CS.Configuration.UpdateConfiguration(p)
	return err
}

// Config is listConfigurations name=.
func (c *Client) Config(name string) (string, error) {
	p := c.CS.Configuration.NewListConfigurationsParams()
	p.SetName(name)
	l, err := c.CS.Configuration.ListConfigurations(p)
	if err != nil {
		return "", err
	}
	for _, x := range l.Configurations {
		if x.Name == name {
			return x.Value, nil
		}
	}
	return "", fmt.Errorf("no configuration %s", name)
}
