// Package cloudapi is the reference management server's CloudStack API face: an http.Handler that
// speaks the subset of CloudStack's API the harness drives (and cloudstack-go sends) over an
// *impl.Server — signed requests (API key + HMAC-SHA1), CloudStack's JSON response shapes, async
// job ids polled with queryAsyncJobResult, CloudStack's error codes. It opens no socket; the command
// line wires a listener to it.
//
// Ids are UUIDs (see UUID), as in CloudStack. Instance names are always i-2-<id>-VM;
// deployVirtualMachine's name and displayname are the VM's name and displayname (names.go).
package cloudapi

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/job"
	"github.com/csconform/csconform/model/vm"
)

// Credentials are one user's API key pair.
type Credentials struct {
	APIKey    string
	SecretKey string
}

// String never shows the secret.
func (c Credentials) String() string { return "apiKey=" + c.APIKey + " secretKey=<hidden>" }

// GoString never shows the secret either (%#v).
func (c Credentials) GoString() string { return "cloudapi.Credentials{" + c.String() + "}" }

// Options tune a Handler.
type Options struct {
	// Logf receives one line per refused request (the reason; never a key or a signature).
	Logf func(format string, args ...any)
	// Now is the clock that expires is checked against (default time.Now).
	Now func() time.Time
}

// ApiErrorCode values (HTTP status and errorcode of an error response).
const (
	ErrUnauthorized = 401
	ErrMalformed    = 430
	ErrParam        = 431
	ErrUnsupported  = 432
	ErrInternal     = 530
)

// CSExceptionErrorCode values (cserrorcode).
var csErrorCodes = map[string]int{
	"CloudRuntimeException":               4250,
	"AgentUnavailableException":           4285,
	"ConcurrentOperationException":        4300,
	"InsufficientCapacityException":       4325,
	"InsufficientServerCapacityException": 4335,
	"InvalidParameterValueException":      4350,
	"ResourceUnavailableException":        4380,
	"OperationTimedoutException":          4560,
	"ServerApiException":                  9999,
}

// Handler serves the API of one management server incarnation.
type Handler struct {
	srv  *impl.Server
	db   *impl.DB
	cfg  *impl.Config
	keys map[string]string // api key -> secret key
	opt  Options
	ids  idMap
	cmds map[string]command // by lowercased command name
	// names: what each deploy was given as name and displayname
	names vmNames
}

type command struct {
	name   string // as CloudStack spells it
	fn     func(r *request) (any, *apiError)
	async  bool    // answers a jobid (a BaseAsyncCmd)
	list   bool    // a BaseListCmd: keyword, page and pagesize
	desc   string  // what listApis says of it
	params []param // the parameters it reads (listApis)
}

// apiError is a ServerApiException: an errorcode (and HTTP status), a cserrorcode, a text.
type apiError struct {
	code, cs int
	text     string
}

// New returns the API face of srv; creds are the accepted key pairs.
func New(srv *impl.Server, opt Options, creds ...Credentials) *Handler {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	h := &Handler{srv: srv, db: srv.DB, cfg: srv.Config, keys: map[string]string{}, opt: opt, names: vmNames{srv.DB}}
	for _, c := range creds {
		h.keys[c.APIKey] = c.SecretKey
	}
	h.cmds = map[string]command{}
	for _, c := range h.commandTable() {
		h.cmds[strings.ToLower(c.name)] = c
	}
	return h
}

// Commands lists the command names the face serves.
func (h *Handler) Commands() []string {
	var out []string
	for _, c := range h.cmds {
		out = append(out, c.name)
	}
	sort.Strings(out)
	return out
}

type request struct {
	cmd    string // lowercased
	params map[string]string
	h      *Handler
	pg     paging // a list command's page (pageParams)
	pgPage *int   // the page parameter, if given
}

func (r *request) get(name string) string { return r.params[name] }

func (r *request) required(name string) (string, *apiError) {
	v := r.params[name]
	if v == "" {
		return "", &apiError{ErrParam, 9999, fmt.Sprintf("Unable to execute API command %s due to missing parameter %s", r.cmd, name)}
	}
	return v, nil
}

// missing is ParamProcessWorker.processParameters' check of the command's required parameters.
func (r *request) missing(c command) *apiError {
	for _, p := range c.params {
		if p.required {
			if _, err := r.required(p.name); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *request) invalid(name, v string) *apiError {
	return &apiError{ErrParam, 9999, fmt.Sprintf("Unable to execute API command %s due to invalid value. Invalid parameter %s value=%s due to incorrect long value format, or entity does not exist or due to incorrect parameter annotation for the field in api cmd class.", r.cmd, name, v)}
}

// flag is a Boolean parameter: as in CloudStack (Boolean.valueOf), anything but "true" is false.
func (r *request) flag(name string) bool { return strings.EqualFold(r.params[name], "true") }

func (h *Handler) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	if err := hr.ParseForm(); err != nil {
		h.writeError(w, "", &apiError{ErrMalformed, 9999, "Malformed request: " + err.Error()})
		return
	}
	req, cmd, ref := h.admit(hr.Form)
	if ref != nil {
		if h.opt.Logf != nil {
			h.opt.Logf("cloudapi: refused %s from %s: %s", quoteName(ref.command), hr.RemoteAddr, ref.why) // quoted and cut: a client's newline would forge log lines
		}
		h.writeError(w, ref.respName, ref.err)
		return
	}
	// ParamProcessWorker first (a required parameter missing, page and pagesize not integers), then
	// BaseListCmd.validateSpecificParameters, then the command
	aerr := req.missing(cmd)
	if aerr == nil && cmd.list {
		aerr = req.pageParams()
	}
	// A request runs only on a database that holds on disk what it holds in memory, and succeeds only
	// if it still does after: what a server answers with success is durable (impl.DB.Durable). A read
	// is refused too, as every command of a CloudStack whose database is down fails: it could show what
	// the disk lacks (a job's result).
	if aerr == nil {
		aerr = h.durable()
	}
	var out any
	if aerr == nil {
		out, aerr = cmd.fn(req)
		if derr := h.durable(); derr != nil {
			aerr = derr
		}
	}
	if aerr != nil {
		h.writeError(w, req.cmd+"response", aerr)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{req.cmd + "response": out})
}

// durable is the error a request gets when the database cannot be written (a full disk, a stopping
// server): CloudStack's answer to a failed transaction (530, CloudRuntimeException, "DB Exception on:").
func (h *Handler) durable() *apiError {
	if err := h.db.Durable(); err != nil {
		return &apiError{ErrInternal, csErrorCodes["CloudRuntimeException"], "DB Exception on: " + err.Error()}
	}
	return nil
}

// refusal is a request that may not run: the error to answer with, the response's name, and for
// the log the command (as sent) and why.
type refusal struct {
	err          *apiError
	respName     string
	command, why string
}

// admit decides whether a parsed request may run: its command and parameters (names lowercased), or
// why not. The names are checked before the signature, so that the parameters the command runs with
// are exactly the ones the signed text lists: one name for each name=value pair of that text.
func (h *Handler) admit(form url.Values) (*request, command, *refusal) {
	names := make([]string, 0, len(form))
	for k := range form {
		names = append(names, k)
	}
	sort.Strings(names) // the first bad name is reported, whatever the map's order
	params := map[string]string{}
	spelled := map[string]string{} // lowercased name -> as sent
	for _, k := range names {
		lk := strings.ToLower(k)
		var bad string
		switch why := badName(k); {
		case why != "":
			bad = fmt.Sprintf("Invalid parameter name %s: %s", quoteName(k), why)
		case spelled[lk] != "":
			bad = fmt.Sprintf("Parameter %s is given more than once (as %s and %s; parameter names are case-insensitive)", quoteName(lk), quoteName(spelled[lk]), quoteName(k))
		case len(form[k]) > 1:
			bad = fmt.Sprintf("Parameter %s is given more than once", quoteName(k))
		}
		if bad != "" {
			return nil, command{}, &refusal{err: &apiError{ErrParam, 9999, bad}, respName: "errorresponse", command: "request", why: bad}
		}
		spelled[lk] = k
		if len(form[k]) > 0 {
			params[lk] = form[k][0]
		}
	}
	cmdName := strings.ToLower(params["command"])
	cmd, known := h.cmds[cmdName]
	if why := h.verify(form, params, known); why != "" {
		respName := "errorresponse"
		if known {
			respName = cmdName + "response"
		}
		text := "unable to verify user credentials and/or request signature"
		if !known && params["command"] != "" {
			// CloudStack's own text, then what a user needs: that the command, not the keys, is what
			// failed (a client that calls listAccounts first otherwise reports bad credentials)
			text += fmt.Sprintf(" (csconform's API face does not serve the command %s: listApis lists what it does; CloudStack 4.22 answers an unknown command with this same 401)", quoteName(params["command"]))
		}
		return nil, command{}, &refusal{err: &apiError{ErrUnauthorized, 0, text},
			respName: respName, command: orNone(params["command"]), why: why}
	}
	return &request{cmd: cmdName, params: params, h: h}, cmd, nil
}

// badName says why a parameter name (decoded) cannot be part of a signed request, "" if it can.
// CloudStack's names are ASCII words such as networkids or details[0].key.
func badName(k string) string {
	if k == "" {
		return "empty"
	}
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c == '=' || c == '&':
			// the signed text is name=value pairs joined by '&' with only the values encoded: such a
			// name would sign like other parameters than the ones it makes
			return "a name may not contain '=' or '&'"
		case c <= ' ' || c >= 0x7f:
			// and lowercasing or Unicode case folding would make other names sign alike
			return "a name is printable ASCII"
		}
	}
	return ""
}

// quoteName quotes a name for an error text and the log: cut before any '=' or '&' (what follows
// may be other parameters' values, such as an apiKey) and to a readable length.
func quoteName(k string) string {
	cut := len(k) > 40
	k = k[:min(len(k), 40)]
	if i := strings.IndexAny(k, "=&"); i >= 0 {
		k, cut = k[:i], true
	}
	if cut {
		return strconv.Quote(k) + "..."
	}
	return strconv.Quote(k)
}

func orNone(s string) string {
	if s == "" {
		return "(no command)"
	}
	return s
}

// verify is ApiServer.verifyRequest: "" if the request may run, else why not (for the log). params
// are the names lowercased, each once (admit refused anything else).
//
// The command is checked first, before the signature and the api key, and an unknown one is
// refused like a bad signature: verifyRequest (apache/cloudstack
// server/src/main/java/com/cloud/api/ApiServer.java @44d54b35), with no session, returns false when
// s_apiNameCmdClassMap does not have the command, and ApiServlet.processRequestInContext (@7f460b58)
// answers any false with 401 "unable to verify user credentials and/or request signature", named
// errorresponse as getSerializedApiError names it when getCmdClass finds no class. (Older
// CloudStack threw ServerApiException(UNSUPPORTED_ACTION_ERROR, "The given command does not exist
// or it is not available for user") there, a 432; the 4.2x code does not.)
func (h *Handler) verify(form url.Values, params map[string]string, known bool) string {
	if !known {
		return "unknown command"
	}
	sig, key := params["signature"], params["apikey"]
	if sig == "" || key == "" {
		return "missing signature or apiKey"
	}
	// as verifyRequest: signatureVersion 3 says the request expires, and then expires is required
	if params["signatureversion"] == "3" {
		exp := params["expires"]
		if exp == "" {
			return "signatureVersion 3 without expires"
		}
		t, ok := parseExpires(exp)
		if !ok {
			return "expires is not a date"
		}
		if t.Before(h.opt.Now()) {
			return "request expired"
		}
	}
	secret, ok := h.keys[key]
	if !ok {
		return "apiKey does not map to a user"
	}
	if !signatureOK(form, secret, sig) {
		return "signature does not match"
	}
	return ""
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (h *Handler) writeError(w http.ResponseWriter, respName string, e *apiError) {
	if respName == "" {
		respName = "errorresponse"
	}
	body := map[string]any{"uuidList": []string{}, "errorcode": e.code, "errortext": e.text}
	if e.cs != 0 {
		body["cserrorcode"] = e.cs
	}
	writeJSON(w, e.code, map[string]any{respName: body})
}

// ---- fixed objects: one zone, one template, one service offering, two network offerings

const (
	zoneName        = "csconform-zone"
	templateName    = "csconform-guest"
	offeringName    = "csconform-small"
	netOffering     = "DefaultIsolatedNetworkOfferingWithSourceNatService"
	persistentNetOf = "DefaultIsolatedNetworkOfferingWithSourceNatServicePersistent"
	dateLayout      = "2006-01-02T15:04:05-0700"
)

func (h *Handler) zoneID() string     { return h.ids.uuid("zone", zoneName) }
func (h *Handler) templateID() string { return h.ids.uuid("template", templateName) }
func (h *Handler) offeringID() string { return h.ids.uuid("serviceoffering", offeringName) }
func (h *Handler) netOfferingID(persistent bool) string {
	if persistent {
		return h.ids.uuid("networkoffering", persistentNetOf)
	}
	return h.ids.uuid("networkoffering", netOffering)
}

func list(key string, items []any) map[string]any {
	if len(items) == 0 {
		return map[string]any{} // CloudStack sends an empty object for an empty list
	}
	return map[string]any{"count": len(items), key: items}
}

func date(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(dateLayout)
}

func (h *Handler) listZones(r *request) (any, *apiError) {
	if id := r.get("id"); id != "" && id != h.zoneID() {
		return r.page("zone", nil)
	}
	return r.pageByName("zone", []any{map[string]any{"id": h.zoneID(), "name": zoneName, "networktype": "Advanced",
		"allocationstate": "Enabled", "securitygroupsenabled": false, "localstorageenabled": false}})
}

func (h *Handler) listTemplates(r *request) (any, *apiError) {
	if _, err := r.required("templatefilter"); err != nil {
		return nil, err
	}
	return r.pageByName("template", []any{map[string]any{"id": h.templateID(), "name": templateName, "displaytext": templateName,
		"isready": true, "ispublic": true, "isfeatured": true, "format": "QCOW2", "hypervisor": "KVM",
		"zoneid": h.zoneID(), "zonename": zoneName, "ostypename": "Other Linux (64-bit)", "templatetype": "USER"}})
}

func (h *Handler) listServiceOfferings(r *request) (any, *apiError) {
	return r.pageByName("serviceoffering", []any{map[string]any{"id": h.offeringID(), "name": offeringName, "displaytext": "1 vCPU, 256 MiB",
		"cpunumber": 1, "cpuspeed": 500, "memory": 256, "storagetype": "shared", "offerha": false}})
}

func (h *Handler) listNetworkOfferings(r *request) (any, *apiError) {
	var out []any
	for _, p := range []bool{false, true} {
		name := netOffering
		if p {
			name = persistentNetOf
		}
		out = append(out, map[string]any{"id": h.netOfferingID(p), "name": name, "displaytext": name,
			"guestiptype": "Isolated", "traffictype": "Guest", "state": "Enabled", "ispersistent": p, "isdefault": !p,
			"specifyvlan": false, "specifyipranges": false, "conservemode": true, "forvpc": false})
	}
	return r.pageByName("networkoffering", out)
}

// ---- id parameters

func (r *request) zone() *apiError {
	v, err := r.required("zoneid")
	if err != nil {
		return err
	}
	if v != r.h.zoneID() {
		return r.invalid("zoneid", v)
	}
	return nil
}

// vmParam resolves a VM uuid to a live (not expunged) user VM.
func (r *request) vmParam(name string, need bool) (*impl.VMVO, *apiError) {
	v := r.get(name)
	if v == "" {
		if need {
			_, err := r.required(name)
			return nil, err
		}
		return nil, nil
	}
	id, ok := r.h.ids.lookupID("vm", v, func(after int64) []int64 { return r.h.db.IDsAfter("vm", after) })
	if !ok {
		return nil, r.invalid(name, v)
	}
	m := r.h.db.VM(id)
	if m == nil || m.Removed || m.Type != "User" {
		return nil, r.invalid(name, v)
	}
	return m, nil
}

func (r *request) networkByUUID(name, v string) (*impl.NetworkVO, *apiError) {
	id, ok := r.h.ids.lookupID("network", v, func(after int64) []int64 { return r.h.db.IDsAfter("network", after) })
	if !ok {
		return nil, r.invalid(name, v)
	}
	n := r.h.db.Network(id)
	if n == nil || n.Removed {
		return nil, r.invalid(name, v)
	}
	return n, nil
}

// vmAndHost reads a command's VM (required, by the parameter vm) and its optional hostid.
func (r *request) vmAndHost(vm string) (*impl.VMVO, string, *apiError) {
	v, err := r.vmParam(vm, true)
	if err != nil {
		return nil, "", err
	}
	host, err := r.hostParam("hostid")
	if err != nil {
		return nil, "", err
	}
	return v, host, nil
}

func (r *request) hostParam(name string) (string, *apiError) {
	v := r.get(name)
	if v == "" {
		return "", nil
	}
	k, ok := r.h.ids.lookupKey("host", v, r.h.db.HostCount, func() []string {
		var ks []string
		for _, x := range r.h.db.Hosts() {
			ks = append(ks, x.ID)
		}
		return ks
	})
	if !ok {
		return "", r.invalid(name, v)
	}
	return k, nil
}

// ---- networks

func (h *Handler) createNetwork(r *request) (any, *apiError) {
	name, err := r.required("name")
	if err != nil {
		return nil, err
	}
	off, err := r.required("networkofferingid")
	if err != nil {
		return nil, err
	}
	if err := r.zone(); err != nil {
		return nil, err
	}
	var persistent bool
	switch off {
	case h.netOfferingID(false):
	case h.netOfferingID(true):
		persistent = true
	default:
		return nil, r.invalid("networkofferingid", off)
	}
	n, nerr := h.srv.NewNetwork(name, persistent, 32)
	if nerr != nil {
		return nil, &apiError{ErrInternal, csErrorCodes["InsufficientCapacityException"], nerr.Error()}
	}
	return map[string]any{"network": h.networkJSON(n)}, nil
}

func (h *Handler) networkJSON(n *impl.NetworkVO) map[string]any {
	return map[string]any{
		"id": h.ids.id("network", n.ID), "name": n.Name, "displaytext": n.Name, "state": string(n.State),
		"zoneid": h.zoneID(), "zonename": zoneName, "networkofferingid": h.netOfferingID(n.Persistent),
		"ispersistent": n.Persistent, "type": "Isolated", "traffictype": "Guest", "broadcastdomaintype": "Vlan",
		"gateway": n.Gateway(), "cidr": n.CIDR + ".0/24", "netmask": "255.255.255.0", "canusefordeploy": true,
		"restartrequired": false, "acltype": "Account", "account": "admin", "domain": "ROOT",
		"created": date(n.Created),
	}
}

func (h *Handler) listNetworks(r *request) (any, *apiError) {
	var only *impl.NetworkVO
	if v := r.get("id"); v != "" {
		n, err := r.networkByUUID("id", v)
		if err != nil {
			return nil, err
		}
		only = n
	}
	var out []any
	for _, n := range h.db.Networks(func(n *impl.NetworkVO) bool { return !n.Removed }) {
		if only != nil && n.ID != only.ID {
			continue
		}
		if name := r.get("name"); name != "" && n.Name != name {
			continue
		}
		out = append(out, h.networkJSON(n))
	}
	return r.pageByName("network", out)
}

// deleteNetwork is async, as in CloudStack: the job shuts the network down and removes it.
func (h *Handler) deleteNetwork(r *request) (any, *apiError) {
	u, err := r.required("id")
	if err != nil {
		return nil, err
	}
	n, err := r.networkByUUID("id", u)
	if err != nil {
		return nil, err
	}
	return h.jobResponse(h.srv.DeleteNetwork(n.ID), 0), nil
}

// ---- virtual machines

func (h *Handler) vmJSON(v *impl.VMVO) map[string]any {
	m := map[string]any{
		"id": h.ids.id("vm", v.ID), "instancename": v.Name,
		"state": string(v.State), "zoneid": h.zoneID(), "zonename": zoneName, "templateid": h.templateID(),
		"templatename": templateName, "serviceofferingid": h.offeringID(), "serviceofferingname": offeringName,
		"hypervisor": "KVM", "cpunumber": 1, "cpuspeed": 500, "memory": 256, "account": "admin", "domain": "ROOT",
		"created": date(v.Created), "haenable": false, "passwordenabled": false,
	}
	m["name"], m["displayname"] = h.names.of(v)
	if v.HostID != "" {
		m["hostid"] = h.ids.uuid("host", v.HostID)
		m["hostname"] = v.HostID
	}
	var nics []any
	for i, n := range h.db.Nics(v.ID) {
		j := h.nicJSON(n, i == 0)
		if i == 0 && n.IP != "" {
			m["ipaddress"] = n.IP
		}
		nics = append(nics, j)
	}
	if len(nics) > 0 {
		m["nic"] = nics
	}
	return m
}

func (h *Handler) nicJSON(n *impl.NicVO, isDefault bool) map[string]any {
	m := map[string]any{
		"id": h.ids.id("nic", n.ID), "virtualmachineid": h.ids.id("vm", n.VMID), "networkid": h.ids.id("network", n.NetworkID),
		"macaddress": n.MAC, "isdefault": isDefault, "traffictype": "Guest", "type": "Isolated", "netmask": "255.255.255.0",
	}
	if n.IP != "" {
		m["ipaddress"] = n.IP
	}
	if nw := h.db.Network(n.NetworkID); nw != nil {
		m["networkname"] = nw.Name
		m["gateway"] = nw.Gateway()
	}
	return m
}

// jobResponse is an async command's immediate answer.
func (h *Handler) jobResponse(j *impl.JobVO, vmID int64) map[string]any {
	out := map[string]any{"jobid": h.ids.id("job", j.ID)}
	if vmID != 0 {
		out["id"] = h.ids.id("vm", vmID)
	}
	return out
}

func (h *Handler) deploy(r *request) (any, *apiError) {
	if _, err := r.required("serviceofferingid"); err != nil {
		return nil, err
	}
	if _, err := r.required("templateid"); err != nil {
		return nil, err
	}
	if err := r.zone(); err != nil {
		return nil, err
	}
	if v := r.get("serviceofferingid"); v != h.offeringID() {
		return nil, r.invalid("serviceofferingid", v)
	}
	if v := r.get("templateid"); v != h.templateID() {
		return nil, r.invalid("templateid", v)
	}
	var nets []int64
	for _, u := range strings.Split(r.get("networkids"), ",") {
		if u = strings.TrimSpace(u); u == "" {
			continue
		}
		n, err := r.networkByUUID("networkids", u)
		if err != nil {
			return nil, err
		}
		nets = append(nets, n.ID)
	}
	if len(nets) == 0 {
		// an advanced zone without security groups needs a network (CloudStack would pick a default)
		return nil, &apiError{ErrParam, csErrorCodes["InvalidParameterValueException"], "Can't create vm of hypervisor type KVM in advanced zone without networks: specify networkids"}
	}
	host, err := r.hostParam("hostid")
	if err != nil {
		return nil, err
	}
	given := givenName{host: r.get("name"), display: r.get("displayname")}
	if given.host != "" {
		if err := h.checkHostName(given.host, nets); err != nil {
			return nil, err
		}
	}
	startVM := r.get("startvm") == "" || r.flag("startvm")
	if !startVM {
		// deployVirtualMachine startvm=false: DeployVMCmd's create() allocates in the API thread,
		// its job has nothing left to do.
		v := h.srv.AllocateVirtualMachine("", nets)
		h.names.set(v.ID, given)
		j := h.db.CreateJob("api", "DeployVMCmd", "VirtualMachine", v.ID, h.srv.ID)
		h.db.CompleteJob("api", j.ID, job.Succeeded, 0, "")
		return h.jobResponse(j, v.ID), nil
	}
	v, j := h.srv.DeployVirtualMachine("", nets, host)
	h.names.set(v.ID, given)
	return h.jobResponse(j, v.ID), nil
}

func (h *Handler) start(r *request) (any, *apiError) {
	v, host, err := r.vmAndHost("id")
	if err != nil {
		return nil, err
	}
	return h.jobResponse(h.srv.StartVirtualMachine(v.ID, host), 0), nil
}

// startOnce is a csconform extension, not a CloudStack command: the instance boot group / HA path,
// which calls advanceStart exactly once (no API retry).
func (h *Handler) startOnce(r *request) (any, *apiError) {
	v, host, err := r.vmAndHost("id")
	if err != nil {
		return nil, err
	}
	return h.jobResponse(h.srv.StartVirtualMachineOnce(v.ID, host), 0), nil
}

func (h *Handler) stop(r *request) (any, *apiError) {
	v, err := r.vmParam("id", true)
	if err != nil {
		return nil, err
	}
	return h.jobResponse(h.srv.StopVirtualMachine(v.ID, r.flag("forced")), 0), nil
}

func (h *Handler) destroy(r *request) (any, *apiError) {
	v, err := r.vmParam("id", true)
	if err != nil {
		return nil, err
	}
	return h.jobResponse(h.srv.DestroyVirtualMachine(v.ID, r.flag("expunge")), 0), nil
}

func (h *Handler) expunge(r *request) (any, *apiError) {
	v, err := r.vmParam("id", true)
	if err != nil {
		return nil, err
	}
	return h.jobResponse(h.srv.ExpungeVirtualMachine(v.ID), 0), nil
}

// migrate is migrateVirtualMachine with the Java's parameter names (MigrateVMCmd: virtualmachineid,
// hostid); without hostid CloudStack plans a destination, which the reference does not: the job
// fails ("Unable to find suitable destination").
func (h *Handler) migrate(r *request) (any, *apiError) {
	v, host, err := r.vmAndHost("virtualmachineid")
	if err != nil {
		return nil, err
	}
	return h.jobResponse(h.srv.MigrateVirtualMachine(v.ID, host), 0), nil
}

// recover is recoverVirtualMachine (RecoverVMCmd, a synchronous BaseCmd): the VM back to Stopped,
// answered with the VM; a VM that is not Destroyed is an InvalidParameterValueException.
func (h *Handler) recover(r *request) (any, *apiError) {
	v, err := r.vmParam("id", true)
	if err != nil {
		return nil, err
	}
	if jerr := h.srv.WaitJob(h.srv.RecoverVirtualMachine(v.ID)); jerr != nil {
		return nil, &apiError{ErrParam, csErrorCodes["InvalidParameterValueException"], strings.TrimPrefix(jerr.Error(), "InvalidParameterValueException: ")}
	}
	cur := h.db.VM(v.ID)
	if cur == nil {
		return nil, &apiError{ErrParam, csErrorCodes["InvalidParameterValueException"], "unable to find a virtual machine"}
	}
	return map[string]any{"virtualmachine": h.vmJSON(cur)}, nil
}

// listVirtualMachines is QueryManagerImpl.searchForUserVMsInternal (apache/cloudstack
// server/src/main/java/com/cloud/api/query/QueryManagerImpl.java @57c33169; a 4.21-era copy with the
// instance lease filter, searchForUserVMIdsAndCount, has the same rules): name is an exact match
// (Op.EQ, on the host name; here the VM's only name, i-2-<id>-VM), state is exact and "present"
// means all but Destroyed and Expunging, keyword is displayName, hostName or (for a root admin, as
// the face's one user is) instanceName LIKE '%keyword%', a NIC's address LIKE it, or state = it.
// Both compare as MySQL's default collation does, ignoring case. Ordered by id; count is every match.
func (h *Handler) listVMs(r *request) (any, *apiError) {
	only, err := r.vmParam("id", false)
	if err != nil {
		return nil, err
	}
	host, err := r.hostParam("hostid")
	if err != nil {
		return nil, err
	}
	var net *impl.NetworkVO
	if v := r.get("networkid"); v != "" {
		if net, err = r.networkByUUID("networkid", v); err != nil {
			return nil, err
		}
	}
	kw := r.keyword()
	state := r.get("state")
	var out []any
	for _, v := range h.db.VMs(func(v *impl.VMVO) bool { return v.Type == "User" && !v.Removed }) {
		switch {
		case only != nil && v.ID != only.ID,
			host != "" && v.HostID != host,
			net != nil && !slices.Contains(v.NetworkIDs, net.ID),
			strings.EqualFold(state, "present") && (v.State == vm.Destroyed || v.State == vm.Expunging),
			state != "" && !strings.EqualFold(state, "present") && !strings.EqualFold(state, string(v.State)),
			r.get("name") != "" && !strings.EqualFold(r.get("name"), hostName(h, v)):
			continue
		}
		if kw != nil && !strings.EqualFold(r.get("keyword"), string(v.State)) {
			// displayName, hostName and instanceName LIKE, the NICs' addresses LIKE (the face's VMs
			// have no public or IPv6 address), state =
			host, display := h.names.of(v)
			values := []string{v.Name, host, display}
			for _, n := range h.db.Nics(v.ID) {
				values = append(values, n.IP)
			}
			if keywordMiss(kw, values...) {
				continue
			}
		}
		out = append(out, h.vmJSON(v))
	}
	return r.page("virtualmachine", out)
}

func (h *Handler) listNics(r *request) (any, *apiError) {
	v, err := r.vmParam("virtualmachineid", true)
	if err != nil {
		return nil, err
	}
	var out []any
	for i, n := range h.db.Nics(v.ID) {
		if id := r.get("nicid"); id != "" && id != h.ids.id("nic", n.ID) {
			continue
		}
		out = append(out, h.nicJSON(n, i == 0))
	}
	return r.page("nic", out) // keyword: ListNicsCmd's search has none
}

func (h *Handler) listVolumes(r *request) (any, *apiError) {
	v, err := r.vmParam("virtualmachineid", false)
	if err != nil {
		return nil, err
	}
	var vmID int64
	if v != nil {
		vmID = v.ID
	}
	var out []any
	for _, vol := range h.db.Volumes(vmID) {
		if vol.Removed {
			continue
		}
		if id := r.get("id"); id != "" && id != h.ids.id("volume", vol.ID) {
			continue
		}
		m := map[string]any{
			"id": h.ids.id("volume", vol.ID), "name": fmt.Sprintf("ROOT-%d", vol.VMID), "type": "ROOT", "state": vol.State,
			"virtualmachineid": h.ids.id("vm", vol.VMID), "path": vol.Path, "zoneid": h.zoneID(), "zonename": zoneName,
			"storagetype": "shared", "deviceid": 0, "size": int64(8) << 30, "hypervisor": "KVM",
		}
		if owner := h.db.VM(vol.VMID); owner != nil {
			m["vmname"] = owner.Name
			m["vmstate"] = string(owner.State)
		}
		out = append(out, m)
	}
	return r.pageByName("volume", out)
}

// listRouters lists the virtual routers (not expunged), each with its guest network and NICs, as
// CloudStack's domainrouter response has them; filters: id, name, state, hostid, networkid.
func (h *Handler) listRouters(r *request) (any, *apiError) {
	host, err := r.hostParam("hostid")
	if err != nil {
		return nil, err
	}
	var net *impl.NetworkVO
	if v := r.get("networkid"); v != "" {
		if net, err = r.networkByUUID("networkid", v); err != nil {
			return nil, err
		}
	}
	var out []any
	for _, v := range h.db.VMs(func(v *impl.VMVO) bool { return v.Type == "DomainRouter" && !v.Removed }) {
		switch {
		case r.get("id") != "" && r.get("id") != h.ids.id("vm", v.ID),
			host != "" && v.HostID != host,
			net != nil && !slices.Contains(v.NetworkIDs, net.ID),
			r.get("state") != "" && !strings.EqualFold(r.get("state"), string(v.State)),
			r.get("name") != "" && r.get("name") != v.Name:
			continue
		}
		m := map[string]any{
			"id": h.ids.id("vm", v.ID), "name": v.Name, "state": string(v.State), "zoneid": h.zoneID(), "zonename": zoneName,
			"role": "VIRTUAL_ROUTER", "hypervisor": "KVM", "account": "admin", "domain": "ROOT", "created": date(v.Created),
			"serviceofferingid": h.offeringID(), "serviceofferingname": offeringName, "templateid": h.templateID(),
		}
		if v.HostID != "" {
			m["hostid"] = h.ids.uuid("host", v.HostID)
			m["hostname"] = v.HostID
		}
		if len(v.NetworkIDs) > 0 {
			m["guestnetworkid"] = h.ids.id("network", v.NetworkIDs[0])
			if nw := h.db.Network(v.NetworkIDs[0]); nw != nil {
				m["guestnetworkname"] = nw.Name
			}
		}
		var nics []any
		for i, n := range h.db.Nics(v.ID) {
			if i == 0 && n.IP != "" {
				m["guestipaddress"] = n.IP
				m["guestmacaddress"] = n.MAC
			}
			nics = append(nics, h.nicJSON(n, i == 0))
		}
		if len(nics) > 0 {
			m["nic"] = nics
		}
		out = append(out, m)
	}
	return r.pageByName("router", out)
}

// listSystemVms: the reference server has no secondary-storage or console-proxy VMs; an empty list
// is the truth (tools such as csconform audit ask for them).
func (h *Handler) listSystemVMs(r *request) (any, *apiError) { return r.page("systemvm", nil) }

func (h *Handler) listHosts(r *request) (any, *apiError) {
	only, err := r.hostParam("id")
	if err != nil {
		return nil, err
	}
	var out []any
	for _, x := range h.db.Hosts() {
		if (only != "" && x.ID != only) || (r.get("name") != "" && r.get("name") != x.ID) {
			continue
		}
		if t := r.get("type"); t != "" && !strings.EqualFold(t, "Routing") {
			continue
		}
		m := map[string]any{
			"id": h.ids.uuid("host", x.ID), "name": x.ID, "state": string(x.Status), "type": "Routing",
			"hypervisor": "KVM", "zoneid": h.zoneID(), "zonename": zoneName, "resourcestate": "Enabled",
			"podid": h.podID(), "clusterid": h.clusterID(),
			"managementserverid": x.MSID, "lastpinged": date(x.LastPinged),
		}
		if !x.DisconnectedOn.IsZero() {
			m["disconnected"] = date(x.DisconnectedOn)
		}
		out = append(out, m)
	}
	return r.pageByName("host", out)
}

// ---- async jobs

var jobCmdClass = map[string]string{
	"DeployVMCmd":            "org.apache.cloudstack.api.command.user.vm.DeployVMCmd",
	"StartVMCmd":             "org.apache.cloudstack.api.command.user.vm.StartVMCmd",
	"StopVMCmd":              "org.apache.cloudstack.api.command.user.vm.StopVMCmd",
	"DestroyVMCmd":           "org.apache.cloudstack.api.command.user.vm.DestroyVMCmd",
	"ExpungeVMCmd":           "org.apache.cloudstack.api.command.admin.vm.ExpungeVMCmd",
	"DeleteNetworkCmd":       "org.apache.cloudstack.api.command.user.network.DeleteNetworkCmd",
	"StartInstanceBootGroup": "csconform.StartInstanceBootGroup",
}

func (h *Handler) queryJob(r *request) (any, *apiError) {
	u, err := r.required("jobid")
	if err != nil {
		return nil, err
	}
	id, ok := h.ids.lookupID("job", u, func(after int64) []int64 { return h.db.IDsAfter("job", after) })
	if !ok {
		return nil, r.invalid("jobid", u)
	}
	j := h.db.Job(id)
	if j == nil {
		return nil, r.invalid("jobid", u)
	}
	return h.jobJSON(j, u), nil
}

// listAsyncJobs is QueryManagerImpl.searchForAsyncJobsInternal (apache/cloudstack
// server/src/main/java/com/cloud/api/query/QueryManagerImpl.java @57c33169): the jobs of
// async_job_view in id order, keyword as cmd LIKE '%keyword%' (cmd is the command's class name).
// The view's removed column is GenericDao.REMOVED_COLUMN (AsyncJobJoinVO @96988ea6), which
// completeAsyncJob sets, and searchAndCount leaves removed rows out: only the jobs still running
// are listed ("Lists all pending asynchronous jobs for the account"), so no entry has completed;
// queryAsyncJobResult reads a job including removed. Each entry is AsyncJobJoinDaoImpl's response,
// named asyncjobs. startdate and the account filters are not honoured (one account here).
func (h *Handler) listAsyncJobs(r *request) (any, *apiError) {
	kw := r.keyword()
	jobs := h.db.JobsInProgress(nil)
	slices.SortFunc(jobs, func(a, b *impl.JobVO) int { return cmp.Compare(a.ID, b.ID) })
	var out []any
	for _, j := range jobs {
		m := h.jobJSON(j, h.ids.id("job", j.ID))
		if keywordMiss(kw, m["cmd"].(string)) {
			continue
		}
		out = append(out, m)
	}
	return r.page("asyncjobs", out)
}

// jobJSON is AsyncJobJoinDaoImpl.newAsyncJobResponse: a job's status and, once done, its result.
func (h *Handler) jobJSON(j *impl.JobVO, u string) map[string]any {
	cmd := jobCmdClass[j.Cmd]
	if cmd == "" {
		cmd = j.Cmd
	}
	out := map[string]any{
		"jobid": u, "cmd": cmd, "created": date(j.Created), "jobprocstatus": 0, "jobstatus": 0, "jobresultcode": 0,
		"userid": h.ids.uuid("user", "admin"), "accountid": h.ids.uuid("account", "admin"), "account": "admin",
		"domainid": h.ids.uuid("domain", "ROOT"), "domainpath": "ROOT",
	}
	if j.InstanceType != "" {
		out["jobinstancetype"] = j.InstanceType
		switch j.InstanceType {
		case "VirtualMachine":
			out["jobinstanceid"] = h.ids.id("vm", j.InstanceID)
		case "Network":
			out["jobinstanceid"] = h.ids.id("network", j.InstanceID)
		}
	}
	if !j.Completed.IsZero() {
		out["completed"] = date(j.Completed)
	}
	switch {
	case !j.Status.Done():
		return out
	case j.Status == job.Succeeded:
		out["jobstatus"] = 1
		out["jobresulttype"] = "object"
		out["jobresult"] = h.jobResult(j)
	default:
		code := j.ResultCode
		if code == 0 {
			code = ErrInternal
		}
		cls, text := splitException(j.Result)
		res := map[string]any{"errorcode": code, "errortext": text}
		if cs, ok := csErrorCodes[cls]; ok {
			res["cserrorcode"] = cs
		}
		out["jobstatus"] = 2
		out["jobresultcode"] = code
		out["jobresulttype"] = "object"
		out["jobresult"] = res
	}
	return out
}

// splitException separates "XxxException: message" into the class and the message (what
// getMessage() would say).
func splitException(s string) (string, string) {
	cls, msg, ok := strings.Cut(s, ": ")
	if ok && strings.HasSuffix(cls, "Exception") && !strings.Contains(cls, " ") {
		return cls, msg
	}
	return "", s
}

func (h *Handler) jobResult(j *impl.JobVO) any {
	if j.Cmd == "ExpungeVMCmd" {
		return map[string]any{"success": true}
	}
	if j.InstanceType == "VirtualMachine" {
		if v := h.db.VM(j.InstanceID); v != nil {
			m := h.vmJSON(v)
			if v.Removed {
				m["state"] = string(vm.Expunging)
			}
			return map[string]any{"virtualmachine": m}
		}
	}
	return map[string]any{"success": true}
}

// ---- configuration

func (h *Handler) configJSON(k impl.ConfigKey) map[string]any {
	return map[string]any{"name": k.Name, "value": h.cfg.Get(k.Name), "defaultvalue": k.Default, "description": k.Description,
		"category": "Advanced", "component": "management-server", "isdynamic": true, "scope": "global"}
}

func (h *Handler) listConfigurations(r *request) (any, *apiError) {
	var out []any
	for _, k := range impl.ConfigKeys {
		if n := r.get("name"); n != "" && n != k.Name {
			continue
		}
		out = append(out, h.configJSON(k))
	}
	return r.pageByName("configuration", out)
}

func (h *Handler) updateConfiguration(r *request) (any, *apiError) {
	name, err := r.required("name")
	if err != nil {
		return nil, err
	}
	var key *impl.ConfigKey
	for i := range impl.ConfigKeys {
		if impl.ConfigKeys[i].Name == name {
			key = &impl.ConfigKeys[i]
		}
	}
	if key == nil {
		return nil, &apiError{ErrParam, csErrorCodes["InvalidParameterValueException"], "Config parameter with name " + name + " doesn't exist"}
	}
	if err := h.cfg.Set(name, r.get("value")); err != nil {
		return nil, &apiError{ErrParam, csErrorCodes["InvalidParameterValueException"], err.Error()}
	}
	return map[string]any{"configuration": h.configJSON(*key)}, nil
}

// hostName is the VM's name as listVirtualMachines' name matches it: the one its deploy was given,
// else its instance name.
func hostName(h *Handler, v *impl.VMVO) string {
	host, _ := h.names.of(v)
	return host
}
