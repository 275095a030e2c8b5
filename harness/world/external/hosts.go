package external

import (
	"errors"
	"strings"

	"github.com/csconform/csconform/harness/audit"
)

// HostSource reads a host's domains from libvirt, or from a csconform hypervisor's truth endpoint
// (URI http://ADDR: GET /domains), which is what a reference setup without libvirt has.
func HostSource(h audit.LibvirtHost) audit.HostSource {
	if strings.HasPrefix(h.URI, "http://") || strings.HasPrefix(h.URI, "https://") {
		return audit.HypervisorHost{Host: h.Host, URL: h.URI}
	}
	return h
}

// HostsFromAPI is an Options.HostsFor: every host CloudStack lists, its URI made from tmpl
// (audit.HostURI: {name}, {id}, {ip}), its domains only those labelled with run ("": all).
func HostsFromAPI(tmpl, run string) func(audit.Records) ([]audit.HostSource, error) {
	return func(rec audit.Records) ([]audit.HostSource, error) {
		if len(rec.Hosts) == 0 {
			return nil, errors.New("listHosts gives no Routing host")
		}
		var out []audit.HostSource
		for _, h := range rec.Hosts {
			out = append(out, HostSource(audit.LibvirtHost{Host: h.Name, URI: audit.HostURI(tmpl, h), Run: run}))
		}
		return out, nil
	}
}
