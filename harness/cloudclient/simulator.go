package cloudclient

// The Simulator plugin's API (configureSimulator, cleanupSimulatorMock), which cloudstack-go has no
// service for: sent through its CustomService, signed as every other request.

import (
	"encoding/json"
	"fmt"
	"strconv"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
)

// MockScope is where a simulator mock applies: "" fields are NULL. findByNameBottomUP matches a
// host's row only when zone, pod and cluster are given with it, so HostScope fills all four.
type MockScope struct {
	Zone, Pod, Cluster, Host string
}

// HostScope is the scope of one host (by name): its zone, pod, cluster and id.
func (c *Client) HostScope(name string) (MockScope, error) {
	p := c.CS.Host.NewListHostsParams()
	p.SetName(name)
	l, err := c.CS.Host.ListHosts(p)
	if err != nil {
		return MockScope{}, err
	}
	for _, h := range l.Hosts {
		if h.Name == name {
			if h.Zoneid == "" || h.Podid == "" || h.Clusterid == "" {
				return MockScope{}, fmt.Errorf("listHosts gives host %s no zone, pod and cluster: a simulator mock needs all three", name)
			}
			return MockScope{Zone: h.Zoneid, Pod: h.Podid, Cluster: h.Clusterid, Host: h.Id}, nil
		}
	}
	return MockScope{}, fmt.Errorf("no host named %q", name)
}

// ZoneScope is the scope of the zone the client deploys in.
func (c *Client) ZoneScope() (MockScope, error) {
	if err := c.discover(); err != nil {
		return MockScope{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return MockScope{Zone: c.zone}, nil
}

// ConfigureSimulator is configureSimulator: command name, value (key:value|...), at scope. It returns
// the mock's id.
func (c *Client) ConfigureSimulator(sc MockScope, name, value string) (int64, error) {
	p := &cs.CustomServiceParams{}
	for k, v := range map[string]string{"zoneid": sc.Zone, "podid": sc.Pod, "clusterid": sc.Cluster, "hostid": sc.Host} {
		if v != "" {
			p.SetParam(k, v)
		}
	}
	p.SetParam("name", name)
	p.SetParam("value", value)
	var out struct {
		Mock struct {
			ID json.Number `json:"id"`
		} `json:"simulatormock"`
	}
	if err := c.custom().CustomRequest("configureSimulator", p, &out); err != nil {
		return 0, fmt.Errorf("configureSimulator %s %s: %w", name, value, err)
	}
	id, err := strconv.ParseInt(out.Mock.ID.String(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("configureSimulator %s: the answer has no mock id", name)
	}
	return id, nil
}

// CleanupSimulatorMock is cleanupSimulatorMock id=.
func (c *Client) CleanupSimulatorMock(id int64) error {
	p := &cs.CustomServiceParams{}
	p.SetParam("id", strconv.FormatInt(id, 10))
	var out map[string]any
	if err := c.custom().CustomRequest("cleanupSimulatorMock", p, &out); err != nil {
		return fmt.Errorf("cleanupSimulatorMock %d: %w", id, err)
	}
	return nil
}

func (c *Client) custom() *cs.CustomService { return c.CS.Custom.(*cs.CustomService) }
