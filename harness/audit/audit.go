// Package audit compares what CloudStack records (VMs, routers, NICs, volumes, networks, hosts, read
// through its API) with what the hosts really run (libvirt domains), and reports the damage the
// orchestration races leave behind: running domains with no live record on that host, guest IPs held
// by two running domains or free in CloudStack while a domain uses them, volumes in
// Destroy/Expunging/Expunged (or gone) still held by a running domain, and networks Shutdown while
// their router runs.
//
// The core, Check, is a pure function over (records, domains). The first three checks are
// model/invariant's (orphan-domain, ip-conflict, volume-in-use): the records and domains are mapped
// into an invariant.Snapshot, so what an orphan is has one definition for the simulator, the real
// worlds and the audit. The fourth (network-router) needs the router of each network, which the
// snapshot does not carry, and is written here.
//
// The audit only reads: it sends list* commands to the API and lists domains on the hosts.
package audit

import (
	"cmp"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// Records are what CloudStack records, in the API's terms. Expunged rows are not listed by the API;
// a domain whose VM was expunged has no record at all here.
type Records struct {
	VMs      []VMRecord      `json:"vms"` // user VMs, virtual routers and system VMs
	Networks []NetworkRecord `json:"networks"`
	Volumes  []VolumeRecord  `json:"volumes"`
	Hosts    []HostRecord    `json:"hosts"`
}

// VMRecord is a VM, router or system VM as listVirtualMachines/listRouters/listSystemVms give it.
type VMRecord struct {
	ID           string `json:"id"`
	InstanceName string `json:"instanceName"` // i-<account>-<id>-VM, r-<id>-VM, s-/v-<id>-VM: the domain's name
	DisplayName  string `json:"displayName,omitempty"`
	Type         string `json:"type"`  // User, DomainRouter, SecondaryStorageVm, ConsoleProxy
	State        string `json:"state"` // Running, Stopped, Destroyed, ...
	HostName     string `json:"hostName,omitempty"`
	// NetworkIDs are a router's guest networks (its NICs' networks are added to them).
	NetworkIDs []string `json:"networkIds,omitempty"`
	NICs       []NIC    `json:"nics,omitempty"`
}

// NIC is one of a VM's NICs.
type NIC struct {
	NetworkID string `json:"networkId"`
	IP        string `json:"ip,omitempty"`
	MAC       string `json:"mac,omitempty"`
}

// NetworkRecord is a network as listNetworks gives it.
type NetworkRecord struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	State string `json:"state"`
	CIDR  string `json:"cidr,omitempty"` // e.g. 10.1.1.0/24: an address inside it that no NIC holds is free
	// Gateway is the router's address on the network: never in the guest pool, never free.
	Gateway string `json:"gateway,omitempty"`
}

// VolumeRecord is a volume as listVolumes gives it.
type VolumeRecord struct {
	ID    string `json:"id"`
	Name  string `json:"name,omitempty"`
	VMID  string `json:"vmId,omitempty"`
	Path  string `json:"path"`  // matched against the end of a domain's disk file
	State string `json:"state"` // Allocated, Ready, Destroy, Expunging, Expunged
}

// HostRecord is a host as listHosts gives it.
type HostRecord struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	State string `json:"state"` // Up, Disconnected, Down, ...
	IP    string `json:"ip,omitempty"`
}

// HostDomains is one host's truth: the domains its libvirtd has.
type HostDomains struct {
	Host    string   `json:"host"` // the host's name in CloudStack
	Domains []Domain `json:"domains"`
}

// Domain is a libvirt domain.
type Domain struct {
	Name string `json:"name"` // libvirt's name
	// Instance is the CloudStack instance name when the source knows it (a csconform label); ""
	// means it is the name, less Options.DomainPrefix.
	Instance string   `json:"instance,omitempty"`
	Running  bool     `json:"running"`
	IPs      []string `json:"ips,omitempty"`   // addresses the domain uses, where they can be known
	MACs     []string `json:"macs,omitempty"`  // its interfaces' MACs (a NIC record with the MAC lends its IP)
	Disks    []string `json:"disks,omitempty"` // files it has as disks (QEMU holds them open)
}

// Options tune Check.
type Options struct {
	// DomainPrefix is stripped from domain names to get instance names; "{host}" in it stands for the
	// host's name. With a prefix, domains without it are not CloudStack's and are ignored.
	DomainPrefix string
	// AllDomains judges every domain; by default only those named as CloudStack names its instances
	// (i-..., r-..., s-..., v-...) are, the others are listed as ignored.
	AllDomains bool
	// Time stamps the findings (default time.Now()).
	Time time.Time
}

// Check names, used as Finding.Check.
const (
	OrphanDomain  = invariant.OrphanDomain
	IPConflict    = invariant.IPConflict
	VolumeInUse   = invariant.VolumeInUse
	NetworkRouter = "network-router"
)

// Finding is one piece of damage.
type Finding struct {
	Check   string `json:"check"`
	Object  string `json:"object"` // domain:NAME, ip:ADDR, volume:PATH, network:ID
	Host    string `json:"host,omitempty"`
	Message string `json:"message"`
}

func (f Finding) String() string { return f.Check + " " + f.Object + ": " + f.Message }

// Ignored is a domain the audit did not judge, and why.
type Ignored struct {
	Host   string `json:"host"`
	Domain string `json:"domain"`
	Why    string `json:"why"`
}

// instanceName matches the names CloudStack gives its KVM domains.
var instanceName = regexp.MustCompile(`^(i-\d+-\d+-|[rsv]-\d+-)`)

// Check compares the records with the hosts' domains. The findings are sorted by (check, object,
// message); ignored lists the domains not judged.
func Check(rec Records, hosts []HostDomains, opt Options) (findings []Finding, ignored []Ignored) {
	if opt.Time.IsZero() {
		opt.Time = time.Now()
	}
	s, ignored := Snapshot(rec, hosts, opt)
	var vs []invariant.Violation
	vs = append(vs, invariant.CheckOrphanDomains(s)...)
	vs = append(vs, invariant.CheckIPs(s)...)
	vs = append(vs, invariant.CheckVolumes(s)...)
	for _, v := range vs {
		findings = append(findings, Finding{Check: v.Invariant, Object: v.Object, Host: hostOf(v, s), Message: v.Message})
	}
	findings = append(findings, checkNetworkRouters(rec, s)...)
	slices.SortStableFunc(findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Check, b.Check), cmp.Compare(a.Object, b.Object), cmp.Compare(a.Message, b.Message))
	})
	return findings, ignored
}

// hostOf finds the host a violation is about (the first running domain named in its message).
func hostOf(v invariant.Violation, s invariant.Snapshot) string {
	for _, d := range s.Domains {
		if d.Running && strings.Contains(v.Message, d.Name+" on host "+d.HostID) {
			return d.HostID
		}
	}
	return ""
}

// Snapshot maps the records and the domains into model/invariant's terms: host names are the host
// ids, instance names the VM names; the guest IP pool is the NICs' addresses (held) plus any address
// a running domain uses inside a network's CIDR that no NIC holds (free); domain disks that end with a
// volume's path take that path. A network's gateway and network address are never free.
func Snapshot(rec Records, hosts []HostDomains, opt Options) (invariant.Snapshot, []Ignored) {
	s := invariant.Snapshot{Time: opt.Time}
	for _, h := range rec.Hosts {
		s.Hosts = append(s.Hosts, invariant.Host{ID: h.Name, Name: h.Name, Status: host.Status(h.State)})
	}
	held := map[string]bool{}
	byMAC := map[string]string{}
	for _, v := range rec.VMs {
		s.VMs = append(s.VMs, invariant.VM{ID: v.ID, Name: v.InstanceName, Type: v.Type, State: vm.State(v.State), HostID: v.HostName})
		for _, n := range v.NICs {
			if n.IP == "" {
				continue
			}
			s.IPs = append(s.IPs, invariant.IP{Address: n.IP, NetworkID: n.NetworkID, VMID: v.ID})
			held[n.IP] = true
			if n.MAC != "" {
				byMAC[strings.ToLower(n.MAC)] = n.IP
			}
		}
	}
	type pool struct {
		id      string
		p       netip.Prefix
		gateway string
	}
	var cidrs []pool
	for _, n := range rec.Networks {
		s.Networks = append(s.Networks, invariant.Network{ID: n.ID, Name: n.Name, State: network.State(n.State)})
		if p, err := netip.ParsePrefix(n.CIDR); err == nil {
			cidrs = append(cidrs, pool{n.ID, p.Masked(), n.Gateway})
		}
	}
	for _, v := range rec.Volumes {
		s.Volumes = append(s.Volumes, invariant.Volume{ID: v.ID, VMID: v.VMID, Path: v.Path, State: v.State})
	}
	var ignored []Ignored
	free := map[string]bool{}
	for _, h := range hosts {
		prefix := strings.ReplaceAll(opt.DomainPrefix, "{host}", h.Host)
		for _, d := range h.Domains {
			name := d.Instance
			if name == "" {
				var ok bool
				if name, ok = strings.CutPrefix(d.Name, prefix); !ok {
					ignored = append(ignored, Ignored{h.Host, d.Name, "no prefix " + prefix})
					continue
				}
			}
			if !opt.AllDomains && !instanceName.MatchString(name) {
				ignored = append(ignored, Ignored{h.Host, d.Name, "not named as a CloudStack instance"})
				continue
			}
			ips := slices.Clone(d.IPs)
			for _, m := range d.MACs {
				if ip, ok := byMAC[strings.ToLower(m)]; ok {
					ips = append(ips, ip)
				}
			}
			ips = uniq(ips)
			dom := invariant.Domain{HostID: h.Host, Name: name, Running: d.Running, IPs: ips}
			for _, f := range d.Disks {
				dom.Disks = append(dom.Disks, volumePath(f, rec.Volumes))
			}
			s.Domains = append(s.Domains, dom)
			if !d.Running {
				continue
			}
			for _, ip := range ips {
				a, err := netip.ParseAddr(ip)
				if err != nil || held[ip] || free[ip] {
					continue
				}
				for _, c := range cidrs {
					if c.p.Contains(a) && ip != c.gateway && a != c.p.Addr() {
						s.IPs = append(s.IPs, invariant.IP{Address: ip, NetworkID: c.id, Free: true})
						free[ip] = true
					}
				}
			}
		}
	}
	return s, ignored
}

// volumePath is the path of the volume record a disk file stands for: the record's path itself, or
// the longest record path the file ends with (a KVM disk is /mnt/<pool>/<path>); else the file.
func volumePath(file string, vols []VolumeRecord) string {
	best := ""
	for _, v := range vols {
		p := v.Path
		if p == "" {
			continue
		}
		if file == p || strings.HasSuffix(file, "/"+strings.TrimPrefix(p, "/")) {
			if len(p) > len(best) {
				best = p
			}
		}
	}
	if best != "" {
		return best
	}
	return file
}

func uniq(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

// checkNetworkRouters: a network CloudStack records as Shutdown must not have its router running
// (the orphaned-network cleanup wrote Shutdown around the lock, D1, or a shutdown lost its host).
func checkNetworkRouters(rec Records, s invariant.Snapshot) []Finding {
	running := map[string][]string{} // instance name -> hosts running it
	for _, d := range s.Domains {
		if d.Running {
			running[d.Name] = append(running[d.Name], d.HostID)
		}
	}
	var out []Finding
	for _, n := range rec.Networks {
		if network.State(n.State) != network.Shutdown {
			continue
		}
		for _, v := range rec.VMs {
			if v.Type != "DomainRouter" || !routerOf(v, n.ID) {
				continue
			}
			for _, h := range uniq(running[v.InstanceName]) {
				out = append(out, Finding{Check: NetworkRouter, Object: "network:" + n.ID, Host: h,
					Message: fmt.Sprintf("network %s (%s) is Shutdown but its router %s (record %s) is running on host %s",
						n.Name, n.ID, v.InstanceName, v.State, h)})
			}
		}
	}
	return out
}

func routerOf(v VMRecord, networkID string) bool {
	if slices.Contains(v.NetworkIDs, networkID) {
		return true
	}
	return slices.ContainsFunc(v.NICs, func(n NIC) bool { return n.NetworkID == networkID })
}

// Confirm keeps the findings of the last pass that every earlier pass also found (same check and
// object): the records and the domains are read one after the other, not atomically, so an operation
// in flight can look like damage once; damage stays.
func Confirm(passes ...[]Finding) []Finding {
	if len(passes) == 0 {
		return nil
	}
	last := passes[len(passes)-1]
	var out []Finding
	for _, f := range last {
		all := true
		for _, p := range passes[:len(passes)-1] {
			if !slices.ContainsFunc(p, func(g Finding) bool { return g.Check == f.Check && g.Object == f.Object }) {
				all = false
				break
			}
		}
		if all {
			out = append(out, f)
		}
	}
	return out
}
