package audit

import (
	"fmt"
	"slices"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/csconform/csconform/drivers/libvirt"
)

// LibvirtHost is one host's libvirtd.
type LibvirtHost struct {
	Host string // the host's name in CloudStack
	URI  string // qemu:///system, qemu+ssh://root@host/system, qemu+tcp://host/system, ...
	// Run, if set, keeps only the domains a csconform run made for this host (the label drivers/libvirt
	// puts in their <metadata>: run and host), and takes their instance names from it.
	Run string
}

// parseDomain reads a domain's XML with libvirt's schema types: its disks (device="disk" of any
// source type: files, block devices, network disks, pool volumes; not cdroms), its MACs, and the
// addresses a csconform guest has on its kernel line (csc.ip=).
func parseDomain(x string) (Domain, libvirt.Label, error) {
	dom, l, _, err := libvirt.ParseDomain(x)
	if err != nil {
		return Domain{}, libvirt.Label{}, err
	}
	d := Domain{Name: dom.Name, Disks: libvirt.DiskSources(dom)}
	if dom.OS != nil {
		for _, f := range strings.Fields(dom.OS.Cmdline) {
			if v, ok := strings.CutPrefix(f, "csc.ip="); ok && v != "-" {
				d.IPs = strings.Split(v, ",")
			}
		}
	}
	if dom.Devices != nil {
		for _, i := range dom.Devices.Interfaces {
			if i.MAC != nil && i.MAC.Address != "" {
				d.MACs = append(d.MACs, i.MAC.Address)
			}
		}
	}
	return d, l, nil
}

// Domains lists the host's domains (running and defined) with what their live XML says. It only reads.
func (h LibvirtHost) Domains() (HostDomains, error) {
	out := HostDomains{Host: h.Host}
	lv, err := libvirt.Connect(h.URI)
	if err != nil {
		return out, fmt.Errorf("host %s: cannot reach libvirtd at %s: %w", h.Host, h.URI, err)
	}
	defer lv.Disconnect()
	doms, _, err := lv.ConnectListAllDomains(1, golibvirt.ConnectListDomainsActive|golibvirt.ConnectListDomainsInactive)
	if err != nil {
		return out, fmt.Errorf("host %s: list domains: %w", h.Host, err)
	}
	for _, dom := range doms {
		x, err := lv.DomainGetXMLDesc(dom, 0)
		if err != nil {
			continue // gone meanwhile
		}
		d, label, err := parseDomain(x)
		if err != nil {
			return out, fmt.Errorf("host %s: domain %s: %w", h.Host, dom.Name, err)
		}
		if h.Run != "" {
			if label.Run != h.Run || label.Host != h.Host {
				continue // another run's, or another host's on a shared libvirtd
			}
			d.Instance = label.Name
		}
		if a, err := lv.DomainIsActive(dom); err == nil && a == 1 {
			d.Running = true
		}
		out.Domains = append(out.Domains, d)
	}
	slices.SortFunc(out.Domains, func(a, b Domain) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// HostURI fills a URI template for a host: {name} is its name, {id} its id, {ip} its address.
func HostURI(template string, h HostRecord) string {
	return strings.NewReplacer("{name}", h.Name, "{id}", h.ID, "{ip}", h.IP).Replace(template)
}
