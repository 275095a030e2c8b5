package cloudapi

import (
	"slices"
	"strings"
)

// The commands the face serves, each with what listApis says of it: CloudStack's name, whether it
// is async (answers a jobid), a description of what this face does, and the parameters it reads.
// docs/api.md lists the same (TestAPIDocListsEveryCommand keeps the two together).

// param is one request parameter, as ApiDiscoveryServiceImpl.getCmdRequestMap describes a
// @Parameter: its name, CommandType lowercased, whether it is required, a description.
type param struct {
	name, typ string
	required  bool
	desc      string
}

// The parameters BaseListCmd adds to every list command (and which the face honours: see page).
var listParams = []param{
	{"keyword", "string", false, "List by keyword"},
	{"page", "integer", false, "the page (1-based); pagesize is required with it"},
	{"pagesize", "integer", false, "entries per page (at most 500, -1 for all); page is required with it"},
}

func (h *Handler) commandTable() []command {
	id := func(what string, required bool) param {
		return param{"id", "uuid", required, "the ID of the " + what}
	}
	return append([]command{
		{name: "createNetwork", fn: h.createNetwork, desc: "Creates an isolated guest network (Allocated; implemented when a VM on it starts)",
			params: []param{{"name", "string", true, "the name of the network"}, {"networkofferingid", "uuid", true, "one of the two network offerings (listNetworkOfferings)"},
				{"zoneid", "uuid", true, "the zone (listZones)"}}},
		{name: "listNetworks", fn: h.listNetworks, list: true, desc: "Lists the networks not removed",
			params: []param{id("network", false), {"name", "string", false, "the network's name (exact)"}}},
		{name: "deleteNetwork", fn: h.deleteNetwork, async: true, desc: "Shuts a network down and removes it (fails while a VM on it is not expunged)",
			params: []param{id("network", true)}},
		{name: "deployVirtualMachine", fn: h.deploy, async: true, desc: "Creates a VM on networks and (unless startvm=false) starts it; its instance name is i-2-<id>-VM",
			params: []param{{"serviceofferingid", "uuid", true, "the service offering (listServiceOfferings)"}, {"templateid", "uuid", true, "the template (listTemplates)"},
				{"zoneid", "uuid", true, "the zone (listZones)"}, {"networkids", "list", false, "the networks (at least one: an advanced zone without security groups)"},
				{"hostid", "uuid", false, "the host to start it on"}, {"startvm", "boolean", false, "false: allocate only, the job completes at once (default true)"},
				{"name", "string", false, "the VM's name, its guest's host name (a host name unique on its networks; default: the instance name)"}, {"displayname", "string", false, "the VM's display name (default: its name)"}}},
		{name: "startVirtualMachine", fn: h.start, async: true, desc: "Starts a VM (VirtualMachineManager.advanceStart, retried once on failure as the API path does)",
			params: []param{id("virtual machine", true), {"hostid", "uuid", false, "the host to start it on"}}},
		{name: "startVirtualMachineOnce", fn: h.startOnce, async: true, desc: "csconform's own, not CloudStack's: the instance boot group / HA start, advanceStart exactly once",
			params: []param{id("virtual machine", true), {"hostid", "uuid", false, "the host to start it on"}}},
		{name: "stopVirtualMachine", fn: h.stop, async: true, desc: "Stops a VM",
			params: []param{id("virtual machine", true), {"forced", "boolean", false, "stop even if the host cannot be reached (clean up the records)"}}},
		{name: "destroyVirtualMachine", fn: h.destroy, async: true, desc: "Destroys a VM (Destroyed; expunged later, or now with expunge=true)",
			params: []param{id("virtual machine", true), {"expunge", "boolean", false, "expunge it at once"}}},
		{name: "expungeVirtualMachine", fn: h.expunge, async: true, desc: "Expunges a destroyed VM: its records are removed",
			params: []param{id("virtual machine", true)}},
		{name: "migrateVirtualMachine", fn: h.migrate, async: true, desc: "Live-migrates a Running VM to another Up host (VirtualMachineManager.migrate through the VM's work queue)",
			params: []param{{"virtualmachineid", "uuid", true, "the VM"}, {"hostid", "uuid", false, "the destination host (required here: the reference plans no destination)"}}},
		{name: "recoverVirtualMachine", fn: h.recover, desc: "Recovers a Destroyed VM not yet expunged: Stopped again, its ROOT volume Ready",
			params: []param{id("virtual machine", true)}},
		{name: "listVirtualMachines", fn: h.listVMs, list: true, desc: "Lists the user VMs not expunged",
			params: []param{id("virtual machine", false), {"name", "string", false, "the VM's name, as its deploy gave it or its instance name (exact, case-insensitive)"},
				{"state", "string", false, "the VM's state (case-insensitive); present: all but Destroyed and Expunging"},
				{"hostid", "uuid", false, "the host it runs on"}, {"networkid", "uuid", false, "a network it has a NIC on"}}},
		{name: "listNics", fn: h.listNics, list: true, desc: "Lists a VM's NICs",
			params: []param{{"virtualmachineid", "uuid", true, "the VM"}, {"nicid", "uuid", false, "the NIC"}}},
		{name: "listVolumes", fn: h.listVolumes, list: true, desc: "Lists the ROOT volumes not removed",
			params: []param{id("volume", false), {"virtualmachineid", "uuid", false, "the VM it belongs to"}}},
		{name: "listHosts", fn: h.listHosts, list: true, desc: "Lists the KVM hosts (agents) that have connected",
			params: []param{id("host", false), {"name", "string", false, "the host's name (exact)"}, {"type", "string", false, "Routing (the only type here)"}}},
		{name: "listRouters", fn: h.listRouters, list: true, desc: "Lists the virtual routers not expunged, each with its guest network and NICs",
			params: []param{id("router", false), {"name", "string", false, "the router's name (exact)"}, {"state", "string", false, "the router's state"},
				{"hostid", "uuid", false, "the host it runs on"}, {"networkid", "uuid", false, "its guest network"}}},
		{name: "listSystemVms", fn: h.listSystemVMs, list: true, desc: "Lists system VMs: none here (no secondary storage VM or console proxy)"},
		{name: "queryAsyncJobResult", fn: h.queryJob, desc: "An async job's status and, once done, its result and completion time",
			params: []param{{"jobid", "uuid", true, "the job"}}},
		{name: "listAsyncJobs", fn: h.listAsyncJobs, list: true, desc: "Lists the async jobs still running (a finished job is read with queryAsyncJobResult)"},
		{name: "listConfigurations", fn: h.listConfigurations, list: true, desc: "Lists the reference server's configuration keys (csconform config)",
			params: []param{{"name", "string", false, "the key (exact)"}}},
		{name: "updateConfiguration", fn: h.updateConfiguration, desc: "Sets a configuration key (checked against its range)",
			params: []param{{"name", "string", true, "the key"}, {"value", "string", false, "the value (empty: the default)"}}},
		{name: "listZones", fn: h.listZones, list: true, desc: "Lists the one zone (advanced, KVM)", params: []param{id("zone", false)}},
		{name: "listServiceOfferings", fn: h.listServiceOfferings, list: true, desc: "Lists the one service offering (1 vCPU, 256 MiB)"},
		{name: "listTemplates", fn: h.listTemplates, list: true, desc: "Lists the one template",
			params: []param{{"templatefilter", "string", true, "any value: there is one template"}}},
		{name: "listNetworkOfferings", fn: h.listNetworkOfferings, list: true, desc: "Lists the two isolated network offerings (persistent and not)"},
		{name: "listApis", fn: h.listApis, desc: "Lists the commands this server serves, with their parameters",
			params: []param{{"name", "string", false, "one command (exact)"}}},
	}, simulatorCommands(h)...)
}

// listApis is ApiDiscoveryServiceImpl.listApis through ListApisCmd (apache/cloudstack
// plugins/api/discovery, ListApisCmd@a6c20f47, ApiDiscoveryServiceImpl@b7278259,
// ApiDiscoveryResponse@57925ec6, ApiParameterResponse@b567165f): a list response of "api" objects
// (name, description, since, isasync, related, params, response, type; this face sends the first
// four that it knows, params as name, description, type, length, required). It is a BaseCmd, not a
// BaseListCmd: no paging, count is every api. A name that is not a command is ListApisCmd's
// ServerApiException(INTERNAL_ERROR, ...).
func (h *Handler) listApis(r *request) (any, *apiError) {
	var out []any
	for _, n := range h.Commands() {
		c := h.cmds[strings.ToLower(n)]
		if name := r.get("name"); name != "" && name != c.name {
			continue
		}
		out = append(out, apiJSON(c))
	}
	if len(out) == 0 {
		return nil, &apiError{ErrInternal, csErrorCodes["ServerApiException"], "Api Discovery plugin was unable to find an api by that name or process any apis"}
	}
	return list("api", out), nil
}

func apiJSON(c command) map[string]any {
	ps := append([]param(nil), c.params...)
	if c.list {
		ps = append(ps, listParams...)
	}
	slices.SortFunc(ps, func(a, b param) int { return strings.Compare(a.name, b.name) })
	params := make([]any, 0, len(ps))
	for _, p := range ps {
		// length is the @Parameter default (255); CloudStack sends it for every parameter
		params = append(params, map[string]any{"name": p.name, "description": p.desc, "type": p.typ, "length": 255, "required": p.required})
	}
	return map[string]any{"name": c.name, "description": c.desc, "isasync": c.async, "params": params}
}
