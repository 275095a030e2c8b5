package audit

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
)

// APIOptions say where CloudStack's API is.
type APIOptions struct {
	URL               string // e.g. http://mgmt:8080/client/api
	APIKey, SecretKey string
	Zone              string        // a zone's id or name: only its hosts, VMs, networks and volumes ("" for all)
	Timeout           time.Duration // per request (default 30 s)
	Insecure          bool          // do not verify the server's TLS certificate
}

// String never shows the secret.
func (o APIOptions) String() string {
	return fmt.Sprintf("api{url=%s apiKey=%s secretKey=<hidden>}", o.URL, o.APIKey)
}

// GoString never shows the secret either.
func (o APIOptions) GoString() string { return o.String() }

// ErrNotReadOnly is what the audit's HTTP transport answers, without sending anything, to any command
// but list* and queryAsyncJobResult: the audit never changes CloudStack.
var ErrNotReadOnly = errors.New("audit: refusing a command that is not read-only")

// readOnly lets only GET requests for list* commands through (cloudstack-go is set to GET only).
type readOnly struct{ next http.RoundTripper }

func (r readOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	cmd := req.URL.Query().Get("command")
	if req.Method != http.MethodGet || !strings.HasPrefix(cmd, "list") {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("%w: %s %q", ErrNotReadOnly, req.Method, cmd)
	}
	return r.next.RoundTrip(req)
}

// NewAPIClient returns a cloudstack-go client that can only read.
func NewAPIClient(o APIOptions) *cs.CloudStackClient {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if o.Insecure {
		tr.TLSClientConfig.InsecureSkipVerify = true
	}
	hc := &http.Client{Timeout: o.Timeout, Transport: readOnly{tr}}
	c := cs.NewClient(o.URL, o.APIKey, o.SecretKey, !o.Insecure, cs.WithHTTPClient(hc))
	c.HTTPGETOnly = true
	return c
}

const pageSize = 500

// paged fetches every page of a list command (count is CloudStack's total); it stops on a short or
// empty page, when count is reached, or when a page brings nothing new (a server that ignores paging).
func paged[T any](fetch func(page int) ([]T, int, error), id func(T) string) ([]T, error) {
	var out []T
	seen := map[string]bool{}
	for page := 1; ; page++ {
		items, count, err := fetch(page)
		if err != nil {
			return nil, err
		}
		fresh := 0
		for _, it := range items {
			if k := id(it); !seen[k] {
				seen[k] = true
				out = append(out, it)
				fresh++
			}
		}
		if fresh == 0 || len(items) < pageSize || len(out) >= count {
			return out, nil
		}
	}
}

// queryString is a request's parameters in an error text (net/http quotes the URL it failed on).
var queryString = regexp.MustCompile(`\?[^"\s]*`)

// FromAPI reads the records through the API (see fromAPI); its errors carry no request parameters,
// so neither the API key nor a signature ends up in a log.
func FromAPI(c *cs.CloudStackClient, zone string) (Records, error) {
	rec, err := fromAPI(c, zone)
	if err != nil {
		return rec, errors.New(queryString.ReplaceAllString(err.Error(), "?…"))
	}
	return rec, nil
}

// fromAPI reads the records through the API: listHosts (type Routing), listVirtualMachines,
// listRouters and listSystemVms (listall; a server without system VMs may refuse the last), the VMs'
// NICs (from listVirtualMachines, else listNics), listNetworks and listVolumes (listall).
func fromAPI(c *cs.CloudStackClient, zone string) (Records, error) {
	var rec Records
	zoneID := ""
	if zone != "" {
		zs, err := c.Zone.ListZones(c.Zone.NewListZonesParams())
		if err != nil {
			return rec, fmt.Errorf("listZones: %w", err)
		}
		for _, z := range zs.Zones {
			if z.Id == zone || z.Name == zone {
				zoneID = z.Id
			}
		}
		if zoneID == "" {
			return rec, fmt.Errorf("no zone %q", zone)
		}
	}

	hosts, err := paged(func(page int) ([]*cs.Host, int, error) {
		p := c.Host.NewListHostsParams()
		p.SetType("Routing")
		p.SetPage(page)
		p.SetPagesize(pageSize)
		if zoneID != "" {
			p.SetZoneid(zoneID)
		}
		l, err := c.Host.ListHosts(p)
		if err != nil {
			return nil, 0, fmt.Errorf("listHosts: %w", err)
		}
		return l.Hosts, l.Count, nil
	}, func(h *cs.Host) string { return h.Id })
	if err != nil {
		return rec, err
	}
	for _, h := range hosts {
		rec.Hosts = append(rec.Hosts, HostRecord{ID: h.Id, Name: h.Name, State: h.State, IP: h.Ipaddress})
	}

	vms, err := paged(func(page int) ([]*cs.VirtualMachine, int, error) {
		p := c.VirtualMachine.NewListVirtualMachinesParams()
		p.SetListall(true)
		p.SetPage(page)
		p.SetPagesize(pageSize)
		if zoneID != "" {
			p.SetZoneid(zoneID)
		}
		l, err := c.VirtualMachine.ListVirtualMachines(p)
		if err != nil {
			return nil, 0, fmt.Errorf("listVirtualMachines: %w", err)
		}
		return l.VirtualMachines, l.Count, nil
	}, func(v *cs.VirtualMachine) string { return v.Id })
	if err != nil {
		return rec, err
	}
	for _, v := range vms {
		r := VMRecord{ID: v.Id, InstanceName: v.Instancename, DisplayName: v.Displayname, Type: "User", State: v.State, HostName: v.Hostname}
		if r.InstanceName == "" {
			r.InstanceName = v.Name // a user without the right to see instance names
		}
		nics := v.Nic
		if len(nics) == 0 {
			l, err := c.Nic.ListNics(c.Nic.NewListNicsParams(v.Id))
			if err != nil {
				return rec, fmt.Errorf("listNics %s: %w", v.Id, err)
			}
			for _, n := range l.Nics {
				r.NICs = append(r.NICs, NIC{NetworkID: n.Networkid, IP: n.Ipaddress, MAC: n.Macaddress})
			}
		}
		for _, n := range nics {
			r.NICs = append(r.NICs, NIC{NetworkID: n.Networkid, IP: n.Ipaddress, MAC: n.Macaddress})
		}
		rec.VMs = append(rec.VMs, r)
	}

	routers, err := paged(func(page int) ([]*cs.Router, int, error) {
		p := c.Router.NewListRoutersParams()
		p.SetListall(true)
		p.SetPage(page)
		p.SetPagesize(pageSize)
		if zoneID != "" {
			p.SetZoneid(zoneID)
		}
		l, err := c.Router.ListRouters(p)
		if err != nil {
			return nil, 0, fmt.Errorf("listRouters: %w", err)
		}
		return l.Routers, l.Count, nil
	}, func(r *cs.Router) string { return r.Id })
	if err != nil {
		return rec, err
	}
	for _, r := range routers {
		v := VMRecord{ID: r.Id, InstanceName: r.Name, Type: "DomainRouter", State: r.State, HostName: r.Hostname}
		if r.Guestnetworkid != "" {
			v.NetworkIDs = []string{r.Guestnetworkid}
		}
		for _, n := range r.Nic {
			v.NICs = append(v.NICs, NIC{NetworkID: n.Networkid, IP: n.Ipaddress, MAC: n.Macaddress})
		}
		rec.VMs = append(rec.VMs, v)
	}

	sp := c.SystemVM.NewListSystemVmsParams()
	if zoneID != "" {
		sp.SetZoneid(zoneID)
	}
	if l, err := c.SystemVM.ListSystemVms(sp); err == nil {
		for _, s := range l.SystemVms {
			typ := "SecondaryStorageVm"
			if s.Systemvmtype == "consoleproxy" {
				typ = "ConsoleProxy"
			}
			rec.VMs = append(rec.VMs, VMRecord{ID: s.Id, InstanceName: s.Name, Type: typ, State: s.State, HostName: s.Hostname})
		}
	}

	nets, err := paged(func(page int) ([]*cs.Network, int, error) {
		p := c.Network.NewListNetworksParams()
		p.SetListall(true)
		p.SetPage(page)
		p.SetPagesize(pageSize)
		if zoneID != "" {
			p.SetZoneid(zoneID)
		}
		l, err := c.Network.ListNetworks(p)
		if err != nil {
			return nil, 0, fmt.Errorf("listNetworks: %w", err)
		}
		return l.Networks, l.Count, nil
	}, func(n *cs.Network) string { return n.Id })
	if err != nil {
		return rec, err
	}
	for _, n := range nets {
		rec.Networks = append(rec.Networks, NetworkRecord{ID: n.Id, Name: n.Name, State: n.State, CIDR: n.Cidr, Gateway: n.Gateway})
	}

	vols, err := paged(func(page int) ([]*cs.Volume, int, error) {
		p := c.Volume.NewListVolumesParams()
		p.SetListall(true)
		p.SetPage(page)
		p.SetPagesize(pageSize)
		if zoneID != "" {
			p.SetZoneid(zoneID)
		}
		l, err := c.Volume.ListVolumes(p)
		if err != nil {
			return nil, 0, fmt.Errorf("listVolumes: %w", err)
		}
		return l.Volumes, l.Count, nil
	}, func(v *cs.Volume) string { return v.Id })
	if err != nil {
		return rec, err
	}
	for _, v := range vols {
		rec.Volumes = append(rec.Volumes, VolumeRecord{ID: v.Id, Name: v.Name, VMID: v.Virtualmachineid, Path: v.Path, State: v.State})
	}
	return rec, nil
}
