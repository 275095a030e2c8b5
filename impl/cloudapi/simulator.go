package cloudapi

// The Simulator plugin's API (apache/cloudstack plugins/hypervisors/simulator, read at
// ConfigureSimulatorCmd@7b29dd9924d03c62857fe40c5c712487fb9718fa,
// QuerySimulatorMockCmd@1988400ff0b676521e1826ade0871366b689716b,
// CleanupSimulatorMockCmd@252e1a738cfc868110063e44419f96ba9f82a08a,
// MockResponse@616857020385aca4b0e9c6445f55ecb9629a6704), acting on the reference's own agents
// (impl/simmock.go). One difference: MockResponse carries the database's numeric zone, pod, cluster
// and host ids; this face has only UUIDs, so it answers with those.

import (
	"fmt"
	"strconv"

	"github.com/csconform/csconform/impl"
)

// The face's one pod and one cluster (listHosts shows them as podid and clusterid).
func (h *Handler) podID() string     { return h.ids.uuid("pod", impl.SimPod) }
func (h *Handler) clusterID() string { return h.ids.uuid("cluster", impl.SimCluster) }

func simulatorCommands(h *Handler) []command {
	scope := func(what string) param {
		return param{what + "id", "uuid", false, "configure range: in a " + what}
	}
	return []command{
		{name: "configureSimulator", fn: h.configureSimulator, desc: "configure simulator: make an agent command wait (wait:MS), fail (result:fail) or throw (result:fault) at zone, pod, cluster or host scope",
			params: []param{scope("zone"), scope("pod"), scope("cluster"), {"hostid", "uuid", false, "configure range: in a host"},
				{"name", "string", true, "which command needs to be configured"},
				{"value", "string", true, "configuration options for this command, key:value pairs separated by |"},
				{"count", "integer", false, "number of times the mock is active"},
				{"jsonresponse", "string", false, "agent command response to be returned (stored; this face runs the command instead, as the Java does for a class it cannot load)"}}},
		{name: "querySimulatorMock", fn: h.querySimulatorMock, desc: "Query simulator mock",
			params: []param{{"id", "long", false, "ID of the configured mock"}}},
		{name: "cleanupSimulatorMock", fn: h.cleanupSimulatorMock, desc: "Cleanup simulator mock",
			params: []param{{"id", "long", false, "Id of the configured mock"}}},
	}
}

// maxMocks bounds the live mockconfiguration rows the face keeps (a test configures a handful).
const maxMocks = 1000

// configureSimulator is ConfigureSimulatorCmd.execute: SimulatorManagerImpl.configureSimulator, then
// the row read back.
func (h *Handler) configureSimulator(r *request) (any, *apiError) {
	var sc [4]string // zone, pod, cluster, host keys ("" = NULL)
	for i, p := range []struct{ name, uuid, key string }{
		{"zoneid", h.zoneID(), impl.SimZone}, {"podid", h.podID(), impl.SimPod}, {"clusterid", h.clusterID(), impl.SimCluster}} {
		if v := r.get(p.name); v != "" {
			if v != p.uuid {
				return nil, r.invalid(p.name, v)
			}
			sc[i] = p.key
		}
	}
	host, aerr := r.hostParam("hostid")
	if aerr != nil {
		return nil, aerr
	}
	sc[3] = host
	var count *int
	if v := r.get("count"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return nil, r.invalid("count", v)
		}
		c := int(n)
		count = &c
	}
	// mockconfiguration's columns: name varchar(255), values and json_response varchar(4096)
	// (create-schema-simulator.sql); MySQL refuses a longer value, so CloudStack's insert fails. The
	// face refuses it up front (431), and stores at most maxMocks live rows: without either, 150 mocks
	// of 2 MB held 615 MB (issue 49).
	for _, c := range []struct {
		name string
		max  int
	}{{"name", 255}, {"value", 4096}, {"jsonresponse", 4096}} {
		if n := len(r.get(c.name)); n > c.max {
			return nil, &apiError{ErrParam, csErrorCodes["InvalidParameterValueException"],
				fmt.Sprintf("Unable to execute API command configuresimulator: %s is %d bytes, longer than the %d of mockconfiguration's column", c.name, n, c.max)}
		}
	}
	m, ok := h.db.Mocks.Configure(sc[0], sc[1], sc[2], sc[3], r.get("name"), r.get("value"), count, r.get("jsonresponse"), maxMocks)
	if !ok {
		return nil, &apiError{ErrParam, csErrorCodes["InvalidParameterValueException"],
			fmt.Sprintf("Unable to execute API command configuresimulator: %d mocks are configured already; remove some with cleanupSimulatorMock", maxMocks)}
	}
	return map[string]any{"simulatormock": h.mockJSON(m)}, nil
}

func (h *Handler) mockJSON(m impl.SimMock) map[string]any {
	out := map[string]any{"id": m.ID, "name": m.Name}
	for k, v := range map[string]struct{ key, uuid string }{
		"zoneid": {m.Zone, h.zoneID()}, "podid": {m.Pod, h.podID()}, "clusterid": {m.Cluster, h.clusterID()}} {
		if v.key != "" {
			out[k] = v.uuid
		}
	}
	if m.Host != "" {
		out["hostid"] = h.ids.uuid("host", m.Host)
	}
	if m.Count != nil {
		out["count"] = *m.Count
	}
	return out
}

// mockID is the LONG id parameter; missing, the Java's findById(null) finds nothing.
func (r *request) mockID() (int64, bool, *apiError) {
	v := r.get("id")
	if v == "" {
		return 0, false, nil
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false, r.invalid("id", v)
	}
	return id, true, nil
}

func (h *Handler) querySimulatorMock(r *request) (any, *apiError) {
	id, ok, aerr := r.mockID()
	if aerr != nil {
		return nil, aerr
	}
	m, found := h.db.Mocks.Query(id)
	if !ok || !found {
		return nil, &apiError{ErrInternal, csErrorCodes["ServerApiException"], "Failed to query mock"}
	}
	return map[string]any{"simulatormock": h.mockJSON(m)}, nil
}

func (h *Handler) cleanupSimulatorMock(r *request) (any, *apiError) {
	id, ok, aerr := r.mockID()
	if aerr != nil {
		return nil, aerr
	}
	if !ok || !h.db.Mocks.Clear(id) {
		return nil, &apiError{ErrInternal, csErrorCodes["ServerApiException"], "Failed to cleanup mock"}
	}
	return map[string]any{"success": true}, nil
}
