package harness

import (
	"fmt"
	"slices"
	"time"

	"github.com/csconform/csconform/impl"
)

// Several management servers on one database (a scenario's managementServers, simulator only).
// ms1 is the Cluster's Server, the one ms-restart restarts; the others are peers, which peer-stop
// stops. Each owns the hosts whose agents connected to it and runs its own job and network GC (the
// cluster-wide try-locks decide which one runs a tick); the API calls go to the running servers in
// turn (apiServer) or to the one a step names. A server that stops is noticed by the others through
// the mshost heartbeat, and they clean up after it (impl/cluster.go).

// peerServer is one peer's process.
type peerServer struct {
	name string
	srv  *impl.Server
	inc  *incarnation
	down bool
	// downs are its stops: from, and to (zero while it is still down)
	downs []span
}

type span struct{ from, to time.Time }

// MaxManagementServers bounds a scenario's managementServers.
const MaxManagementServers = 8

// serverNames are the msids of n servers: ms1 … msN.
func serverNames(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("ms%d", i))
	}
	return out
}

// startPeers starts ms2 … msN and gives every host its order of servers (the agent's host= list,
// rotated per host so that the hosts spread over the servers as a balancer spreads them).
func (c *Cluster) startPeers(n int) {
	names := serverNames(n)
	for i, h := range c.HostIDs {
		k := i % n
		c.sim().fabric.Prefer(h, append(slices.Clone(names[k:]), names[:k]...))
	}
	for _, name := range names[1:] {
		p := &peerServer{name: name}
		c.peers = append(c.peers, p)
		c.startPeer(p)
	}
}

func (c *Cluster) startPeer(p *peerServer) {
	ep := c.sim().fabric.Endpoint(p.name)
	ep.Listen(true)
	p.inc = &incarnation{Scheduler: c.sim().sched}
	p.srv = impl.NewServer(p.name, p.inc, c.DB, c.Config, c.Defects, ep)
	p.srv.Clustered, p.srv.Peers = true, c.runningServer
	p.srv.TaskPrefix, p.srv.ThreadPrefix = p.name+"/", p.name+":"
	p.srv.Start()
	p.down = false
}

// runningServer finds a server process that runs (nil: none by that msid, or it is stopped).
func (c *Cluster) runningServer(msid string) *impl.Server {
	c.procMu.Lock()
	srv, down := c.server, c.msDown
	c.procMu.Unlock()
	if srv != nil && srv.ID == msid {
		if down {
			return nil
		}
		return srv
	}
	for _, p := range c.peers {
		if p.name == msid && !p.down {
			return p.srv
		}
	}
	return nil
}

func (c *Cluster) peer(name string) (*peerServer, error) {
	for _, p := range c.peers {
		if p.name == name {
			return p, nil
		}
	}
	if len(c.peers) == 0 {
		return nil, fmt.Errorf("no peer management server %q: the scenario runs one server (managementServers: 2 or more)", name)
	}
	return nil, fmt.Errorf("no peer management server %q (peers: %s)", name, peerList(c.peers))
}

func peerList(ps []*peerServer) string {
	var n []string
	for _, p := range ps {
		n = append(n, p.name)
	}
	return fmt.Sprint(n)
}

// PeerStop ends a peer's process: its threads die, its agents' connections close (they reconnect to
// the next server in their order), its mshost row stops being updated. The database stays.
func (c *Cluster) PeerStop(name string) error {
	p, err := c.peer(name)
	if err != nil {
		return err
	}
	if p.down {
		return fmt.Errorf("management server %s is already down", name)
	}
	p.down = true
	p.downs = append(p.downs, span{from: c.Now()})
	c.sim().fabric.Endpoint(name).Listen(false)
	p.inc.dead = true
	c.sim().sched.Kill(name + "/")
	p.srv.PeerLinksClosed()
	return nil
}

// PeerStart starts a stopped peer again with the same msid (a new run id).
func (c *Cluster) PeerStart(name string) error {
	p, err := c.peer(name)
	if err != nil {
		return err
	}
	if !p.down {
		return fmt.Errorf("management server %s is already up", name)
	}
	c.startPeer(p)
	p.downs[len(p.downs)-1].to = c.Now()
	return nil
}

// apiServer is the balancer in front of the API: the running servers in turn, one call each.
func (c *Cluster) apiServer() *impl.Server {
	all := serverNames(c.servers)
	for range all {
		name := all[c.apiTurn%len(all)]
		c.apiTurn++
		if s := c.runningServer(name); s != nil {
			return s
		}
	}
	return c.Server()
}

// apiDown says no server takes API calls: the one server is down, or every one of several is.
func (c *Cluster) apiDown() bool {
	if c.servers <= 1 {
		return c.serverDown()
	}
	return !slices.ContainsFunc(serverNames(c.servers), func(n string) bool { return c.runningServer(n) != nil })
}
