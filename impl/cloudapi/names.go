package cloudapi

import (
	"regexp"
	"strings"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/vm"
)

// vmNames are what deployVirtualMachine was given as name and displayname. CloudStack keeps them in
// vm_instance (host_name: the guest's host name; display_name) beside instance_name (i-2-<id>-VM); so
// does the reference's VM row (VMVO.HostName, DisplayName), written by the face alone, so that they
// survive a restart on the same state file as every other column (they were once the face's memory,
// and a restart lost every name).
type vmNames struct{ db *impl.DB }

type givenName struct{ host, display string }

// set writes the names given (nothing when none was: the row's empty columns mean the defaults).
func (n vmNames) set(id int64, g givenName) {
	if g != (givenName{}) {
		n.db.SetVMNames(id, g.host, g.display)
	}
}

// of is the VM's host name and display name as the API shows them: what the deploy was given, the
// instance name where it was given none (CloudStack defaults the display name to the host name).
func (n vmNames) of(v *impl.VMVO) (host, display string) {
	host = v.HostName
	if host == "" {
		host = v.Name
	}
	display = v.DisplayName
	if display == "" {
		display = host
	}
	return host, display
}

// hostNameRE is CloudStack's check of a VM's host name (UserVmManagerImpl, RFC 1123's labels): ASCII
// letters, digits and hyphens, 1 to 63 characters, not starting with a digit or hyphen nor ending
// with a hyphen.
var hostNameRE = regexp.MustCompile(`^[a-zA-Z]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$`)

// checkHostName refuses a name CloudStack refuses: one that is no host name, or one a live VM on one
// of the networks has already (CloudStack: unique in the network's domain).
func (h *Handler) checkHostName(name string, nets []int64) *apiError {
	if !hostNameRE.MatchString(name) {
		return &apiError{ErrParam, csErrorCodes["InvalidParameterValueException"], "Invalid name. Vm name can contain ASCII letters 'a' through 'z', the digits '0' through '9', and the hyphen ('-'), must be between 1 and 63 characters long, and can't start or end with \"-\" and can't start with digit"}
	}
	for _, v := range h.db.VMs(func(v *impl.VMVO) bool {
		return v.Type == "User" && !v.Removed && v.State != vm.Expunging
	}) {
		if host, _ := h.names.of(v); !strings.EqualFold(host, name) {
			continue
		}
		for _, n := range v.NetworkIDs {
			for _, want := range nets {
				if n == want {
					return &apiError{ErrParam, csErrorCodes["InvalidParameterValueException"], "The vm with hostName " + name + " already exists in the network domain"}
				}
			}
		}
	}
	return nil
}
