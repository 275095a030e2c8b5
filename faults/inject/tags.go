package inject

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
)

// APITags reads tags through CloudStack's API with list* commands only (give it a read-only client:
// audit.NewAPIClient): an instance's resource tags from listVirtualMachines (matched by instance
// name, the domain's name), a host's host tags from listHosts (type Routing, matched by name or
// address). Every check asks the API again: a tag removed since the last run allows nothing.
type APITags struct {
	Client *cs.CloudStackClient
}

const tagPageSize = 500

// InstanceTags are the resource tags of the user instance named domain (i-2-5-VM).
// listVirtualMachines does not list routers and system VMs: name patterns allow them.
func (a APITags) InstanceTags(domain string) ([]Tag, error) {
	seen := 0
	for page := 1; ; page++ {
		p := a.Client.VirtualMachine.NewListVirtualMachinesParams()
		p.SetListall(true)
		p.SetPage(page)
		p.SetPagesize(tagPageSize)
		l, err := a.Client.VirtualMachine.ListVirtualMachines(p)
		if err != nil {
			return nil, fmt.Errorf("listVirtualMachines: %w", redact(err))
		}
		for _, v := range l.VirtualMachines {
			if v.Instancename == domain || (v.Instancename == "" && v.Name == domain) {
				var out []Tag
				for _, t := range v.Tags {
					out = append(out, Tag{t.Key, t.Value})
				}
				return out, nil
			}
		}
		seen += len(l.VirtualMachines)
		if len(l.VirtualMachines) < tagPageSize || seen >= l.Count {
			return nil, fmt.Errorf("CloudStack lists no user instance named %s", domain)
		}
	}
}

// HostTags are the host tags of the Routing host with this name or address.
func (a APITags) HostTags(host string) ([]string, error) {
	seen := 0
	for page := 1; ; page++ {
		p := a.Client.Host.NewListHostsParams()
		p.SetType("Routing")
		p.SetPage(page)
		p.SetPagesize(tagPageSize)
		l, err := a.Client.Host.ListHosts(p)
		if err != nil {
			return nil, fmt.Errorf("listHosts: %w", redact(err))
		}
		for _, h := range l.Hosts {
			if h.Name == host || h.Ipaddress == host {
				var out []string
				for _, t := range strings.Split(h.Hosttags, ",") {
					if t = strings.TrimSpace(t); t != "" {
						out = append(out, t)
					}
				}
				return out, nil
			}
		}
		seen += len(l.Hosts)
		if len(l.Hosts) < tagPageSize || seen >= l.Count {
			return nil, fmt.Errorf("CloudStack lists no Routing host named %s", host)
		}
	}
}

// queryString is a request's parameters in an error text (net/http quotes the URL it failed on):
// the API key and the signature must not reach a refusal, the terminal or the audit log.
var queryString = regexp.MustCompile(`\?[^"\s]*`)

func redact(err error) error {
	return errors.New(queryString.ReplaceAllString(err.Error(), "?…"))
}
