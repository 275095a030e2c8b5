package harness

import (
	"fmt"
	"sync"

	"github.com/csconform/csconform/harness/cloudclient"
	"github.com/csconform/csconform/impl"
)

// ClientAPI is how the Cluster's client operations reach the management server: directly (calls into
// impl, the simulator's way, deterministic) or through CloudStack's API with cloudstack-go
// (apiClient). Ids are the reference server's row ids, which the harness reads its records by.
type ClientAPI interface {
	CreateNetwork(name string, persistent bool) (int64, error)
	// DeleteNetwork submits a deleteNetwork; wait finishes its job.
	DeleteNetwork(netID int64) (wait func() error, err error)
	// Deploy submits a deployVirtualMachine (start=false: startvm=false); the VM exists once it
	// returns, wait finishes its job.
	Deploy(name string, networks []int64, hostID string, start bool) (vmID int64, wait func() error, err error)
	// VMOp submits start, startNoRetry, stop, forceStop, destroy, destroyExpunge, expunge, migrate
	// (hostID: the destination) or recover.
	VMOp(kind string, vmID int64, hostID string) (wait func() error, err error)
}

// client is the Cluster's way to the server: the direct one unless a world set another.
func (c *Cluster) client() ClientAPI { return c.clientFor("") }

// clientFor is the way for one client: with several servers, the one its step names, or the
// balancer's pick.
func (c *Cluster) clientFor(client string) ClientAPI {
	if c.api != nil {
		return c.api
	}
	if c.servers > 1 {
		if name := c.via[client]; name != "" {
			if s := c.runningServer(name); s != nil {
				return directAPI{s, c.w.clientEnv()}
			}
		}
		return directAPI{c.apiServer(), c.w.clientEnv()}
	}
	return directAPI{c.Server(), c.w.clientEnv()}
}

// directAPI calls a management server incarnation's API-level operations: the current one, or with
// several servers the one the balancer picks (apiServer). A job is waited for on the client's env.
type directAPI struct {
	s   *impl.Server
	env impl.Env
}

func (d directAPI) CreateNetwork(name string, persistent bool) (int64, error) {
	return d.s.CreateNetwork(name, persistent, 32).ID, nil
}

func (d directAPI) DeleteNetwork(netID int64) (func() error, error) {
	j := d.s.DeleteNetwork(netID)
	return func() error { return d.s.WaitJobOn(d.env, j) }, nil
}

func (d directAPI) Deploy(_ string, networks []int64, hostID string, start bool) (int64, func() error, error) {
	s := d.s
	if !start {
		return s.AllocateVirtualMachine("", networks).ID, func() error { return nil }, nil
	}
	v, j := s.DeployVirtualMachine("", networks, hostID)
	return v.ID, func() error { return s.WaitJobOn(d.env, j) }, nil
}

func (d directAPI) VMOp(kind string, vmID int64, hostID string) (func() error, error) {
	s := d.s
	var j *impl.JobVO
	switch kind {
	case "start":
		j = s.StartVirtualMachine(vmID, hostID)
	case "startNoRetry":
		j = s.StartVirtualMachineOnce(vmID, hostID)
	case "stop":
		j = s.StopVirtualMachine(vmID, false)
	case "forceStop":
		j = s.StopVirtualMachine(vmID, true)
	case "destroy":
		j = s.DestroyVirtualMachine(vmID, false)
	case "destroyExpunge":
		j = s.DestroyVirtualMachine(vmID, true)
	case "expunge":
		j = s.ExpungeVirtualMachine(vmID)
	case "migrate":
		j = s.MigrateVirtualMachine(vmID, hostID)
	case "recover":
		j = s.RecoverVirtualMachine(vmID)
	default:
		return nil, fmt.Errorf("unknown operation %q", kind)
	}
	return func() error { return s.WaitJobOn(d.env, j) }, nil
}

// apiClient performs the operations through CloudStack's API with cloudstack-go. It maps the API's
// UUIDs to the reference server's row ids by what the API shows: a network by its name, a VM by its
// instance name.
type apiClient struct {
	c  *Cluster
	cc *cloudclient.Client

	mu   sync.Mutex
	nets map[int64]string
	vms  map[int64]string
}

func newAPIClient(c *Cluster, cc *cloudclient.Client) *apiClient {
	return &apiClient{c: c, cc: cc, nets: map[int64]string{}, vms: map[int64]string{}}
}

func (a *apiClient) CreateNetwork(name string, persistent bool) (int64, error) {
	u, err := a.cc.CreateNetwork(name, persistent)
	if err != nil {
		return 0, err
	}
	for _, n := range a.c.DB.Networks(func(n *impl.NetworkVO) bool { return n.Name == name }) {
		a.mu.Lock()
		a.nets[n.ID] = u
		a.mu.Unlock()
		return n.ID, nil
	}
	return 0, fmt.Errorf("network %s (%s) is not in the records", name, u)
}

func (a *apiClient) DeleteNetwork(netID int64) (func() error, error) {
	a.mu.Lock()
	u, ok := a.nets[netID]
	a.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("network %d was not created through the API", netID)
	}
	job, err := a.cc.DeleteNetwork(u)
	if err != nil {
		return nil, err
	}
	return func() error { return a.cc.Wait(job) }, nil
}

func (a *apiClient) Deploy(name string, networks []int64, hostID string, start bool) (int64, func() error, error) {
	var us []string
	a.mu.Lock()
	for _, n := range networks {
		us = append(us, a.nets[n])
	}
	a.mu.Unlock()
	u, job, err := a.cc.Deploy(name, us, hostID, start)
	if err != nil {
		return 0, nil, err
	}
	v, err := a.cc.VM(u)
	if err != nil {
		return 0, nil, err
	}
	row := a.c.DB.VMByName(v.Instancename)
	if row == nil {
		return 0, nil, fmt.Errorf("VM %s (%s) is not in the records", v.Instancename, u)
	}
	a.mu.Lock()
	a.vms[row.ID] = u
	a.mu.Unlock()
	return row.ID, func() error { return a.cc.Wait(job) }, nil
}

func (a *apiClient) VMOp(kind string, vmID int64, hostID string) (func() error, error) {
	a.mu.Lock()
	u, ok := a.vms[vmID]
	a.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("VM %d was not deployed through the API", vmID)
	}
	job, err := a.cc.VMOp(kind, u, hostID)
	if err != nil {
		return nil, err
	}
	return func() error { return a.cc.Wait(job) }, nil
}
