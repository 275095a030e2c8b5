package audit

import (
	"encoding/xml"
	"fmt"
	"net/url"
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

// domainXML is what the audit reads of a domain's live XML.
type domainXML struct {
	Name     string `xml:"name"`
	Metadata struct {
		Label libvirt.Label `xml:"csconform"`
	} `xml:"metadata"`
	Cmdline string `xml:"os>cmdline"`
	Disks   []struct {
		Device string `xml:"device,attr"`
		Source struct {
			File string `xml:"file,attr"`
			Dev  string `xml:"dev,attr"`
			Name string `xml:"name,attr"`
		} `xml:"source"`
	} `xml:"devices>disk"`
	Interfaces []struct {
		MAC struct {
			Address string `xml:"address,attr"`
		} `xml:"mac"`
	} `xml:"devices>interface"`
}

// parseDomain reads a domain's XML: its disks (device="disk": files, block devices, network volumes;
// not cdroms), its MACs, and the addresses a csconform guest has on its kernel line (csc.ip=).
func parseDomain(x string) (Domain, libvirt.Label, error) {
	var dx domainXML
	if err := xml.Unmarshal([]byte(x), &dx); err != nil {
		return Domain{}, libvirt.Label{}, err
	}
	d := Domain{Name: dx.Name}
	for _, f := range strings.Fields(dx.Cmdline) {
		if v, ok := strings.CutPrefix(f, "csc.ip="); ok && v != "-" {
			d.IPs = strings.Split(v, ",")
		}
	}
	for _, dk := range dx.Disks {
		if dk.Device != "" && dk.Device != "disk" {
			continue
		}
		for _, s := range []string{dk.Source.File, dk.Source.Dev, dk.Source.Name} {
			if s != "" {
				d.Disks = append(d.Disks, s)
				break
			}
		}
	}
	for _, i := range dx.Interfaces {
		if i.MAC.Address != "" {
			d.MACs = append(d.MACs, i.MAC.Address)
		}
	}
	l := dx.Metadata.Label
	l.XMLName = xml.Name{}
	return d, l, nil
}

// Domains lists the host's domains (running and defined) with what their live XML says. It only reads.
func (h LibvirtHost) Domains() (HostDomains, error) {
	out := HostDomains{Host: h.Host}
	u, err := url.Parse(h.URI)
	if err != nil {
		return out, fmt.Errorf("host %s: libvirt URI %q: %w", h.Host, h.URI, err)
	}
	lv, err := golibvirt.ConnectToURI(u)
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
