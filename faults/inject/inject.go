// Package inject applies faults to staging CloudStack hosts, safely: a plan is built first (pure),
// checked against an explicit allowlist and a blast-radius limit, printed, and applied only when the
// operator says yes. Every fault that lasts is time-boxed and healed when its time is up, when a step
// fails, and when the context is cancelled (Ctrl-C); every action goes to an append-only audit log.
//
// Commands run through an Executor: over ssh on a staging host (SSH), or locally (Local). What runs
// is plain argv, never a shell line built from input: names are checked against a strict pattern.
package inject

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Executor runs one command on one host and returns its combined output.
type Executor interface {
	Run(ctx context.Context, host string, argv []string) (string, error)
}

// SSH runs commands as User on the host over ssh (BatchMode: keys only, never a password prompt).
type SSH struct {
	User    string        // default root
	Options []string      // extra ssh options, e.g. -i KEY, -p PORT
	Timeout time.Duration // connect timeout (default 10 s)
}

// args are ssh's options and destination for host, the same for Run and Resolve; a host or user
// that ssh could read as anything else is refused.
func (s SSH) args(host string) ([]string, error) {
	user := s.User
	if user == "" {
		user = "root"
	}
	if err := CheckHost(host); err != nil {
		return nil, err
	}
	if err := CheckUser(user); err != nil {
		return nil, err
	}
	t := s.Timeout
	if t <= 0 {
		t = 10 * time.Second
	}
	args := append([]string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=" + strconv.Itoa(int(t.Seconds()))}, s.Options...)
	return append(args, user+"@"+host), nil
}

// Run is ssh USER@HOST -- ARGV (each word quoted for the remote shell).
func (s SSH) Run(ctx context.Context, host string, argv []string) (string, error) {
	args, err := s.args(host)
	if err != nil {
		return "", err
	}
	args = append(args, "--")
	for _, a := range argv {
		args = append(args, shellQuote(a))
	}
	out, err := exec.CommandContext(ctx, "ssh", args...).CombinedOutput()
	return string(out), err
}

// Endpoint is where ssh connects for a host name: its configuration applied (ssh -G).
type Endpoint struct {
	HostName, User, Port string
	ProxyJump            string // "" when none: the jump hosts, [USER@]HOST[:PORT] separated by commas
	ProxyCommand         string // "" when none: the command ssh connects through
	// ControlPath ("" when none) is a socket of a shared connection ssh uses if a master listens
	// on it: that connection may lead anywhere. ControlMaster is shown beside it.
	ControlPath, ControlMaster string
}

func (e Endpoint) String() string {
	s := e.User + "@" + e.HostName + ":" + e.Port
	if e.ProxyJump != "" {
		s += " via " + e.ProxyJump
	}
	if e.ProxyCommand != "" {
		s += " through ProxyCommand " + strconv.Quote(e.ProxyCommand)
	}
	if e.ControlPath != "" {
		s += " sharing ControlPath " + strconv.Quote(e.ControlPath) + " (ControlMaster " + cmp.Or(e.ControlMaster, "no") + ")"
	}
	return s
}

// JumpHosts are the host names of e's ProxyJump, in order: each [ssh://][USER@]HOST[:PORT], an IPv6
// address in brackets.
func (e Endpoint) JumpHosts() []string {
	if e.ProxyJump == "" {
		return nil
	}
	var hosts []string
	for _, j := range strings.Split(e.ProxyJump, ",") {
		j = strings.TrimPrefix(strings.TrimSpace(j), "ssh://")
		if i := strings.LastIndex(j, "@"); i >= 0 {
			j = j[i+1:]
		}
		if rest, ok := strings.CutPrefix(j, "["); ok {
			j, _, _ = strings.Cut(rest, "]")
		} else {
			j, _, _ = strings.Cut(j, ":")
		}
		hosts = append(hosts, j)
	}
	return hosts
}

// Resolver says where an executor really connects for a host name (an alias in ssh's config can
// point anywhere): the allowlist is matched against that too.
type Resolver interface {
	Resolve(ctx context.Context, host string) (Endpoint, error)
}

// Resolve asks ssh itself (ssh -G, with the same options and destination as Run: it prints the
// configuration it would use and connects nowhere).
func (s SSH) Resolve(ctx context.Context, host string) (Endpoint, error) {
	args, err := s.args(host)
	if err != nil {
		return Endpoint{}, err
	}
	out, err := exec.CommandContext(ctx, "ssh", append([]string{"-G"}, args...)...).CombinedOutput()
	if err != nil {
		return Endpoint{}, fmt.Errorf("ssh -G %s: %v: %s", host, err, trim(firstLine(string(out))))
	}
	var e Endpoint
	for _, l := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(l), " ")
		switch strings.ToLower(k) {
		case "hostname":
			e.HostName = v
		case "user":
			e.User = v
		case "port":
			e.Port = v
		case "proxyjump":
			if v != "none" {
				e.ProxyJump = v
			}
		case "proxycommand":
			if v != "none" {
				e.ProxyCommand = v
			}
		case "controlpath":
			if v != "none" {
				e.ControlPath = v
			}
		case "controlmaster":
			e.ControlMaster = v
		}
	}
	return e, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// hostPattern is a host name or IPv4 address: no user part (@), no leading -, no whitespace, no
// port, nothing ssh would read as an option or a URI.
var hostPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// CheckHost refuses anything but a bare host name or address (IPv6 addresses too).
func CheckHost(h string) error {
	if hostPattern.MatchString(h) {
		return nil
	}
	if ip, err := netip.ParseAddr(h); err == nil && ip.Is6() && ip.Zone() == "" {
		return nil
	}
	return fmt.Errorf("bad host name %q: want a bare host name or address (no user@, options, port or spaces; the ssh user is --ssh-user)", h)
}

// userPattern is an ssh user name (given on its own: --ssh-user).
var userPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// CheckUser refuses an ssh user that is not a plain login name.
func CheckUser(u string) error {
	if userPattern.MatchString(u) {
		return nil
	}
	return fmt.Errorf("bad ssh user %q: want a plain login name (letters, digits, _ . -)", u)
}

// Local runs commands on this machine, whatever the host is called (a one-machine staging setup).
type Local struct{}

// Run executes argv here.
func (Local) Run(ctx context.Context, _ string, argv []string) (string, error) {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	return string(out), err
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Fault kinds. They carry the names `csconform faults` gives the scenario faults, so a fault means
// the same thing in a scenario, an external run and a staging injection.
const (
	Crash          = "crash"
	AgentRestart   = "agent-restart"
	AgentKill      = "agent-kill"
	Disconnect     = "disconnect"
	SlowRouterBoot = "slow-router-boot"
	Backdate       = "backdate"
)

// Kind documents one fault.
type Kind struct {
	Name      string
	Targets   string        // what it acts on
	Lasts     bool          // time-boxed, healed after --duration
	Default   time.Duration // the duration when none is given (0: --duration is required)
	Doc, Heal string
}

// Kinds are the faults, in the order --help lists them.
var Kinds = []Kind{
	{Crash, "--host H --vm DOMAIN", false, 0,
		"SIGKILL the domain's QEMU (pid from /run/libvirt/qemu/DOMAIN.pid): libvirt reports it crashed, the agent sends an out-of-band ping",
		"none: a crash is instantaneous; CloudStack's HA or the operator starts the VM again"},
	{AgentRestart, "--host H ...", true, 10 * time.Second,
		"systemctl stop cloudstack-agent (a graceful stop: the agent sends its ShutdownCommand), started again after --duration (default 10s); its domains keep running",
		"systemctl start cloudstack-agent"},
	{AgentKill, "--host H ...", true, 10 * time.Second,
		"systemctl kill --signal=SIGKILL cloudstack-agent (no ShutdownCommand: the server notices by missed pings), started again after --duration (default 10s; the unit's Restart= may bring it back sooner); its domains keep running",
		"systemctl start cloudstack-agent"},
	{Disconnect, "--host H ... --mgmt-port P", true, 0,
		"iptables DROP of the host's traffic to and from the management server's agent port (8250), each rule tagged with a comment unique to this run",
		"iptables -D of exactly those rules (by their comment); a host-side timer (systemd-run) removes them too if csconform dies"},
	{SlowRouterBoot, "--host H --vm r-N-VM", true, 0,
		"virsh suspend of the router's domain (do it while the router boots): its boot takes --duration longer",
		"virsh resume"},
	{Backdate, "--db-host M --network UUID --by D", true, 0,
		"on the database host: UPDATE cloud.networks SET created = created - D for one network (a test network made old, for the orphaned-network cleanup)",
		"the same UPDATE with + D"},
}

// Renamed are the names inject's faults had before they took the scenario faults' names; they are
// still accepted.
var Renamed = map[string]string{
	"crash-domain":      Crash,
	"agent-stop":        AgentRestart,
	"cut-link":          Disconnect,
	"delay-router-boot": SlowRouterBoot,
	"backdate-network":  Backdate,
}

// KindByName finds a fault kind.
func KindByName(name string) (Kind, bool) {
	if n, ok := Renamed[name]; ok {
		name = n
	}
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Spec is what the operator asked for.
type Spec struct {
	Fault    string
	Hosts    []string      // target hosts (or the database host for backdate-network)
	VM       string        // domain name (crash-domain, delay-router-boot)
	Network  string        // network uuid (backdate-network)
	Duration time.Duration // how long a lasting fault stays (required for those)
	By       time.Duration // backdate-network: how far back
	MgmtPort int           // cut-link: the agent port (default 8250)
	ID       string        // tags this run's rules and heal units (default from the clock)
}

// Step is one command on one host.
type Step struct {
	Host string   `json:"host"`
	Argv []string `json:"argv"`
}

// String is the step as it will run: each argument shell-quoted, so what a dry run shows is exactly
// what ssh is given.
func (s Step) String() string {
	q := make([]string, len(s.Argv))
	for i, a := range s.Argv {
		q[i] = shellQuote(a)
	}
	return s.Host + ": " + strings.Join(q, " ")
}

// Plan is what a fault does: the apply steps, and the heal steps that undo them (run in order).
type Plan struct {
	Kind    Kind
	Targets []string // "host:H", "vm:H/D", "network:U"
	Apply   []Step
	Heal    []Step
	// Disarm cancels a host's dead man's switch once its heal steps all ran: left armed, the timer
	// would heal again later (start the agent an operator has since stopped, say).
	Disarm   []Step
	Duration time.Duration
	ID       string
}

// safe is what a name may look like before it goes into a command.
var safe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:@-]*$`)

// Build makes the plan of a spec. It runs nothing.
func Build(s Spec) (Plan, error) {
	k, ok := KindByName(s.Fault)
	if !ok {
		return Plan{}, fmt.Errorf("unknown fault %q (see csconform inject -h)", s.Fault)
	}
	if s.ID == "" {
		s.ID = strconv.FormatInt(time.Now().UnixMilli(), 36)
	}
	if !safe.MatchString(s.ID) {
		return Plan{}, fmt.Errorf("bad run id %q", s.ID)
	}
	p := Plan{Kind: k, Duration: s.Duration, ID: s.ID}
	if len(s.Hosts) == 0 {
		return p, errors.New("no host: give --host")
	}
	for _, h := range s.Hosts {
		if err := CheckHost(h); err != nil {
			return p, err
		}
	}
	if k.Lasts && s.Duration <= 0 && k.Default > 0 {
		s.Duration = k.Default
		p.Duration = s.Duration
	}
	if k.Lasts && s.Duration <= 0 {
		return p, fmt.Errorf("%s lasts until healed: give --duration", k.Name)
	}
	if !k.Lasts && s.Duration > 0 {
		return p, fmt.Errorf("%s is instantaneous: --duration does not apply", k.Name)
	}
	needVM := k.Name == Crash || k.Name == SlowRouterBoot
	if needVM {
		if len(s.Hosts) != 1 || s.VM == "" || !safe.MatchString(s.VM) {
			return p, fmt.Errorf("%s needs one --host and a --vm domain name (letters, digits, _ . : @ -)", k.Name)
		}
		if k.Name == SlowRouterBoot && !strings.HasPrefix(s.VM, "r-") {
			return p, fmt.Errorf("%s: %q is not a router (r-N-VM)", k.Name, s.VM)
		}
		p.Targets = []string{"vm:" + s.Hosts[0] + "/" + s.VM}
	} else if s.VM != "" {
		return p, fmt.Errorf("%s takes no --vm", k.Name)
	}
	seconds := strconv.Itoa(int((s.Duration + 30*time.Second).Seconds()))
	switch k.Name {
	case Crash:
		h := s.Hosts[0]
		// the pid file is read by the remote command itself; the domain name is checked above
		p.Apply = []Step{{h, []string{"sh", "-c", `kill -9 "$(cat /run/libvirt/qemu/` + s.VM + `.pid)"`}}}
	case SlowRouterBoot:
		h := s.Hosts[0]
		p.Apply = []Step{{h, []string{"virsh", "-c", "qemu:///system", "suspend", s.VM}}}
		p.Heal = []Step{{h, []string{"virsh", "-c", "qemu:///system", "resume", s.VM}}}
	case AgentRestart, AgentKill:
		stop := []string{"systemctl", "stop", "cloudstack-agent"}
		if k.Name == AgentKill {
			stop = []string{"systemctl", "kill", "--signal=SIGKILL", "cloudstack-agent"}
		}
		for _, h := range s.Hosts {
			p.Targets = append(p.Targets, "host:"+h)
			p.Apply = append(p.Apply,
				Step{h, []string{"systemd-run", "--unit", "csconform-heal-" + s.ID, "--on-active=" + seconds + "s", "systemctl", "start", "cloudstack-agent"}},
				Step{h, stop})
			p.Heal = append(p.Heal, Step{h, []string{"systemctl", "start", "cloudstack-agent"}})
			p.Disarm = append(p.Disarm, disarm(h, s.ID))
		}
	case Disconnect:
		port := s.MgmtPort
		if port == 0 {
			port = 8250
		}
		tag := "csconform-inject-" + s.ID
		rules := [][]string{
			{"OUTPUT", "-p", "tcp", "--dport", strconv.Itoa(port), "-m", "comment", "--comment", tag, "-j", "DROP"},
			{"INPUT", "-p", "tcp", "--sport", strconv.Itoa(port), "-m", "comment", "--comment", tag, "-j", "DROP"},
		}
		for _, h := range s.Hosts {
			p.Targets = append(p.Targets, "host:"+h)
			// the dead man's switch first: if csconform dies, the host heals itself
			del := []string{"sh", "-c", deleteTagged(tag)}
			p.Apply = append(p.Apply, Step{h, append([]string{"systemd-run", "--unit", "csconform-heal-" + s.ID, "--on-active=" + seconds + "s"}, del...)})
			for _, r := range rules {
				p.Apply = append(p.Apply, Step{h, append([]string{"iptables", "-I"}, r...)})
				p.Heal = append(p.Heal, Step{h, append([]string{"iptables", "-D"}, r...)})
			}
			p.Disarm = append(p.Disarm, disarm(h, s.ID))
		}
	case Backdate:
		if len(s.Hosts) != 1 || !safeUUID.MatchString(s.Network) || s.By <= 0 {
			return p, errors.New("backdate needs one --db-host, a --network UUID and --by DURATION")
		}
		h := s.Hosts[0]
		by := strconv.Itoa(int(s.By.Seconds()))
		sql := func(op string) []string {
			return []string{"mysql", "cloud", "-e", "UPDATE networks SET created = created " + op + " INTERVAL " + by +
				" SECOND WHERE uuid = '" + s.Network + "' AND removed IS NULL"}
		}
		p.Targets = []string{"network:" + s.Network}
		p.Apply = []Step{{h, sql("-")}}
		p.Heal = []Step{{h, sql("+")}}
	}
	return p, nil
}

// disarm stops the timer systemd-run made (unit csconform-heal-ID: its .timer); the transient
// service goes with it.
func disarm(h, id string) Step {
	return Step{h, []string{"systemctl", "stop", "csconform-heal-" + id + ".timer"}}
}

// timerGone is what systemctl says of a unit that is not there (the timer fired, or never started).
const timerGone = "not loaded"

var safeUUID = regexp.MustCompile(`^[0-9a-fA-F-]{8,64}$`)

// deleteTagged is a shell loop on the host that deletes every iptables rule carrying the tag.
func deleteTagged(tag string) string {
	return `for c in INPUT OUTPUT; do while n=$(iptables -L $c --line-numbers -n | grep -F "/* ` + tag +
		` */" | head -1 | cut -d" " -f1) && [ -n "$n" ]; do iptables -D $c $n; done; done`
}

// Policy is what the operator allows. A host is allowed by its name (AllowHosts) or by a CloudStack
// host tag it carries (AllowHostTags); an instance by its domain name (AllowVMs) or by a CloudStack
// resource tag it carries (AllowTags); a network by its uuid. Tags are read through Tags, only when
// a name does not already allow the target, and a tag that cannot be read allows nothing.
type Policy struct {
	AllowHosts    []string // path.Match patterns on host names
	AllowVMs      []string // patterns on domain names
	AllowNetworks []string // patterns on network uuids
	AllowTags     []Tag    // resource tags (KEY=VALUE) that allow an instance
	AllowHostTags []string // host tags that allow a host
	Tags          TagSource
	MaxTargets    int // blast radius (default 1)
	// Resolve, if set, says where a host name really leads (ssh -G): the host is allowed only if
	// both the name given and the host ssh connects to are, and every ProxyJump host on the way
	// (each resolved in turn); a ProxyCommand only with AllowProxyCommand. Injector.Run sets it from
	// an Exec that is a Resolver.
	Resolve func(host string) (Endpoint, error)
	// AllowProxyCommand lets ssh connect through a ProxyCommand (--allow-proxy-command): its target
	// is in a command, which cannot be checked against the allowlist.
	AllowProxyCommand bool
	// AllowControlPath lets ssh use a shared connection (ControlPath, --allow-control-path): a
	// master already listening on the socket may be connected to any host.
	AllowControlPath bool
}

// Tag is a CloudStack resource tag.
type Tag struct{ Key, Value string }

func (t Tag) String() string { return t.Key + "=" + t.Value }

// ParseTag reads KEY=VALUE (the key non-empty; the value may be empty).
func ParseTag(s string) (Tag, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return Tag{}, fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	return Tag{k, v}, nil
}

// TagSource reads the tags CloudStack keeps of a target (read-only: APITags).
type TagSource interface {
	// InstanceTags are the resource tags of the instance whose domain (instance name) this is.
	InstanceTags(domain string) ([]Tag, error)
	// HostTags are the host tags (hosttags) of the host with this name or address.
	HostTags(host string) ([]string, error)
}

// Check refuses a plan whose targets are not all allowlisted or that touches too many.
func (pol Policy) Check(p Plan) error {
	max := pol.MaxTargets
	if max <= 0 {
		max = 1
	}
	if len(p.Targets) > max {
		return fmt.Errorf("refused: %d targets exceed the blast radius --max-targets %d", len(p.Targets), max)
	}
	hosts := map[string]string{} // host -> why it is not allowed ("" allowed), read once
	hostWhy := func(h string) string {
		if why, ok := hosts[h]; ok {
			return why
		}
		why := pol.hostWhy(h)
		hosts[h] = why
		return why
	}
	for _, t := range p.Targets {
		kind, v, _ := strings.Cut(t, ":")
		why := "unknown kind of target"
		switch kind {
		case "host":
			why = hostWhy(v)
		case "vm":
			h, d, _ := strings.Cut(v, "/")
			if why = hostWhy(h); why == "" {
				why = pol.vmWhy(d)
			}
		case "network":
			why = ""
			if !match(pol.AllowNetworks, v) {
				why = fmt.Sprintf("network %s matches no --allow-network pattern; allow it with --allow-network %s", v, v)
			}
		}
		if why != "" {
			return fmt.Errorf("refused: %s is not allowlisted: %s", t, why)
		}
	}
	for _, st := range append(append([]Step(nil), p.Apply...), p.Heal...) {
		if why := hostWhy(st.Host); why != "" {
			return fmt.Errorf("refused: host %s is not allowlisted: %s", st.Host, why)
		}
	}
	return nil
}

// hostWhy is "" if the host is allowed, else why not and which flag would allow it: the name
// given must be allowed, and so must the host ssh connects to for it (an alias can point anywhere).
func (pol Policy) hostWhy(h string) string {
	return pol.hostWhySeen(h, map[string]bool{})
}

// hostWhySeen is hostWhy, the jump hosts of a ProxyJump checked in turn as hosts; seen are the hosts
// already being checked (a -J on the command line is in every host's ssh -G).
func (pol Policy) hostWhySeen(h string, seen map[string]bool) string {
	seen[strings.ToLower(h)] = true
	if why := pol.nameWhy(h); why != "" || pol.Resolve == nil {
		return why
	}
	e, err := pol.Resolve(h)
	if err != nil {
		return fmt.Sprintf("cannot tell what ssh connects to for %s (%v)", h, err)
	}
	if e.HostName == "" {
		return fmt.Sprintf("cannot tell what ssh connects to for %s (ssh -G gives no hostname)", h)
	}
	if e.ProxyCommand != "" && !pol.AllowProxyCommand {
		return fmt.Sprintf("ssh connects to %s (ssh -G): a ProxyCommand's target cannot be checked against the allowlist; "+
			"remove it (--ssh-opt, ~/.ssh/config) or allow it with --allow-proxy-command", e)
	}
	if e.ControlPath != "" && !pol.AllowControlPath {
		return fmt.Sprintf("ssh connects to %s (ssh -G): a connection shared through a ControlPath may lead to any host, not checked against the allowlist; "+
			"remove it (--ssh-opt=-oControlPath=none, ~/.ssh/config) or allow it with --allow-control-path", e)
	}
	if !strings.EqualFold(e.HostName, h) {
		if why := pol.nameWhy(e.HostName); why != "" {
			return fmt.Sprintf("ssh connects to %s (ssh -G): %s", e, why)
		}
	}
	for _, j := range e.JumpHosts() {
		if seen[strings.ToLower(j)] {
			continue
		}
		if err := CheckHost(j); err != nil {
			return fmt.Sprintf("ssh connects to %s (ssh -G): jump host %q: %v", e, j, err)
		}
		if why := pol.hostWhySeen(j, seen); why != "" {
			return fmt.Sprintf("ssh connects to %s (ssh -G): jump host %s: %s", e, j, why)
		}
	}
	return ""
}

// nameWhy is hostWhy for one name, without resolving it.
func (pol Policy) nameWhy(h string) string {
	if matchHost(pol.AllowHosts, h) {
		return ""
	}
	why := fmt.Sprintf("host %s matches no --allow-host pattern", h)
	hint := "; allow it with --allow-host " + h
	if len(pol.AllowHostTags) == 0 {
		return why + hint + " (or by a CloudStack host tag it carries: --allow-host-tag TAG, with --api)"
	}
	if pol.Tags == nil {
		return why + " and its host tags cannot be read without --api" + hint
	}
	tags, err := pol.Tags.HostTags(h)
	if err != nil {
		return why + " and its host tags cannot be read (" + err.Error() + ")" + hint
	}
	for _, t := range tags {
		if slices.Contains(pol.AllowHostTags, t) {
			return ""
		}
	}
	if len(tags) == 0 {
		return why + " and it carries no host tag" + hint
	}
	return why + " and none of its host tags (" + strings.Join(tags, ", ") + ") is an --allow-host-tag" + hint + " or --allow-host-tag " + tags[0]
}

// vmWhy is "" if the domain is allowed, else why not and which flag would allow it.
func (pol Policy) vmWhy(d string) string {
	if match(pol.AllowVMs, d) {
		return ""
	}
	why := fmt.Sprintf("domain %s matches no --allow-vm pattern", d)
	hint := "; allow it with --allow-vm " + d
	if len(pol.AllowTags) == 0 {
		return why + hint + " (or by a CloudStack tag it carries: --allow-tag KEY=VALUE, with --api)"
	}
	if pol.Tags == nil {
		return why + " and its tags cannot be read without --api" + hint
	}
	tags, err := pol.Tags.InstanceTags(d)
	if err != nil {
		return why + " and its tags cannot be read (" + err.Error() + ")" + hint
	}
	var have []string
	for _, t := range tags {
		if slices.Contains(pol.AllowTags, t) {
			return ""
		}
		have = append(have, t.String())
	}
	if len(have) == 0 {
		return why + " and it carries no tag" + hint
	}
	return why + " and none of its tags (" + strings.Join(have, ", ") + ") is an --allow-tag" + hint + " or --allow-tag " + have[0]
}

// matchHost is match for host names, which are case-insensitive (and ssh -G lowercases them).
func matchHost(patterns []string, h string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(strings.ToLower(p), strings.ToLower(h)); err == nil && ok {
			return true
		}
	}
	return false
}

func match(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(p, s); err == nil && ok {
			return true
		}
	}
	return false
}

// Record is one line of the audit log.
type Record struct {
	Time   time.Time `json:"time"`
	ID     string    `json:"id"`
	Fault  string    `json:"fault"`
	Action string    `json:"action"` // plan, refuse, dry-run, apply, heal, disarm, done
	Target string    `json:"target,omitempty"`
	Host   string    `json:"host,omitempty"`
	Argv   []string  `json:"argv,omitempty"`
	Result string    `json:"result"` // ok, would run, error: ...
	Output string    `json:"output,omitempty"`
	// Heal and Disarm, on a plan record, are the steps that undo the fault: what `csconform inject
	// heal` runs for a run that was killed before it healed.
	Heal   []Step `json:"heal,omitempty"`
	Disarm []Step `json:"disarm,omitempty"`
}

// Log appends records as JSON lines to a file opened O_APPEND (never truncated or rewritten).
type Log struct {
	mu  sync.Mutex
	f   *os.File
	enc *json.Encoder
}

// OpenLog opens (or creates, 0600) an append-only audit log.
func OpenLog(name string) (*Log, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return &Log{f: f, enc: json.NewEncoder(f)}, nil
}

// Write appends one record (and syncs it to disk: the log must survive a crash of csconform).
func (l *Log) Write(r Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	if err := l.enc.Encode(r); err != nil {
		return err
	}
	return l.f.Sync()
}

// Close closes the file.
func (l *Log) Close() error { return l.f.Close() }

// Injector applies plans.
type Injector struct {
	Exec   Executor
	Policy Policy
	Log    *Log
	Out    io.Writer // what a person reads
	Yes    bool      // without it nothing is run: a dry run
	// HealTimeout bounds the healing after a cancel (default 1 min).
	HealTimeout time.Duration
	// After is time.After (tests shorten it).
	After func(time.Duration) <-chan time.Time
}

// Run checks the plan, then (with Yes) applies it, keeps it for its duration and heals it; on a
// failed step, on a cancelled context (Ctrl-C) and at the end, every heal step runs. A refused plan
// and a dry run execute nothing.
func (in *Injector) Run(ctx context.Context, p Plan) (err error) {
	if in.After == nil {
		in.After = time.After
	}
	out := in.Out
	if out == nil {
		out = io.Discard
	}
	rec := func(r Record) {
		r.ID, r.Fault = p.ID, p.Kind.Name
		if in.Log != nil {
			if e := in.Log.Write(r); e != nil && err == nil {
				err = e
			}
		}
	}
	targets := strings.Join(p.Targets, ",")
	pol := in.Policy
	if r, ok := in.Exec.(Resolver); ok && pol.Resolve == nil {
		pol.Resolve = func(h string) (Endpoint, error) { return r.Resolve(ctx, h) }
	}
	if e := pol.Check(p); e != nil {
		rec(Record{Action: "refuse", Target: targets, Result: e.Error()})
		return e // the caller says it, once, where errors go
	}
	rec(Record{Action: "plan", Target: targets, Result: fmt.Sprintf("%d apply, %d heal steps, duration %s, dry run %v", len(p.Apply), len(p.Heal), p.Duration, !in.Yes),
		Heal: p.Heal, Disarm: p.Disarm})
	if !in.Yes {
		fmt.Fprintf(out, "DRY RUN of %s on %s (nothing is changed; add --yes to apply):\n", p.Kind.Name, targets)
		if pol.Resolve != nil { // where ssh connects for each host, as the allowlist saw it
			var seen []string
			for _, s := range append(append([]Step(nil), p.Apply...), p.Heal...) {
				if slices.Contains(seen, s.Host) {
					continue
				}
				seen = append(seen, s.Host)
				if e, err := pol.Resolve(s.Host); err == nil {
					fmt.Fprintf(out, "  ssh to      %s: %s (ssh -G)\n", s.Host, e)
				}
			}
		}
		for _, s := range p.Apply {
			fmt.Fprintln(out, "  would run  ", s)
			rec(Record{Action: "dry-run", Host: s.Host, Argv: s.Argv, Result: "would run"})
		}
		if p.Duration > 0 {
			fmt.Fprintf(out, "  then wait   %s (or until Ctrl-C or an error)\n", p.Duration)
		}
		for _, s := range p.Heal {
			fmt.Fprintln(out, "  then heal  ", s)
			rec(Record{Action: "dry-run", Host: s.Host, Argv: s.Argv, Result: "would run to heal"})
		}
		for _, s := range p.Disarm {
			fmt.Fprintln(out, "  then cancel", s)
			rec(Record{Action: "dry-run", Host: s.Host, Argv: s.Argv, Result: "would run once healed"})
		}
		return nil
	}

	applied := 0
	heal := func(why string) error {
		if applied == 0 || len(p.Heal) == 0 {
			return nil
		}
		hc, cancel := context.WithTimeout(context.Background(), cmpOr(in.HealTimeout, time.Minute))
		defer cancel()
		_, errs := in.healSteps(hc, p.Heal, p.Disarm, why, "", "healed ("+why+")", rec, out)
		return errors.Join(errs...)
	}
	defer func() {
		if r := recover(); r != nil {
			_ = heal("panic")
			panic(r)
		}
	}()
	for _, s := range p.Apply {
		if ctx.Err() != nil {
			e := heal("cancelled")
			rec(Record{Action: "done", Target: targets, Result: "cancelled before " + s.String()})
			return errors.Join(ctx.Err(), e)
		}
		o, e := in.Exec.Run(ctx, s.Host, s.Argv)
		r := Record{Action: "apply", Host: s.Host, Argv: s.Argv, Result: "ok", Output: trim(o)}
		if e != nil {
			r.Result = "error: " + e.Error()
		}
		rec(r)
		fmt.Fprintf(out, "applied %s: %s\n", s, r.Result)
		applied++ // a failed step may have half-happened: heal it too
		if e != nil {
			he := heal("a step failed")
			rec(Record{Action: "done", Target: targets, Result: "error: " + e.Error()})
			return errors.Join(fmt.Errorf("%s: %w", s, e), he)
		}
	}
	why := "duration over"
	if p.Duration > 0 {
		fmt.Fprintf(out, "%s holds for %s (Ctrl-C heals at once)\n", p.Kind.Name, p.Duration)
		select {
		case <-in.After(p.Duration):
		case <-ctx.Done():
			why = "cancelled"
		}
	}
	he := heal(why)
	res := "ok"
	if he != nil {
		res = "error: " + he.Error()
	}
	rec(Record{Action: "done", Target: targets, Result: res})
	if why == "cancelled" {
		return errors.Join(ctx.Err(), he)
	}
	return he
}

// healSteps runs heal steps, then cancels the heal timers of the hosts whose every heal step ran (a
// host not fully healed keeps its timer: it is the last resort), recording each action and saying
// it on out (indent before each line, healed the word for a heal step's line). It returns whether
// a heal step failed, and the errors.
func (in *Injector) healSteps(ctx context.Context, heal, disarm []Step, why, indent, healed string, rec func(Record), out io.Writer) (bool, []error) {
	var errs []error
	failed := map[string]bool{} // hosts with a heal step that failed
	for _, s := range heal {
		o, e := in.Exec.Run(ctx, s.Host, s.Argv)
		r := Record{Action: "heal", Host: s.Host, Argv: s.Argv, Result: "ok (" + why + ")", Output: trim(o)}
		if e != nil {
			r.Result = "error: " + e.Error()
			errs = append(errs, fmt.Errorf("heal %s: %w", s, e))
			failed[s.Host] = true
		}
		rec(r)
		fmt.Fprintf(out, "%s%s %s: %s\n", indent, healed, s, r.Result)
	}
	for _, s := range disarm {
		if failed[s.Host] {
			fmt.Fprintf(out, "%skept %s armed: the heal failed\n", indent, s)
			continue
		}
		o, e := in.Exec.Run(ctx, s.Host, s.Argv)
		r := Record{Action: "disarm", Host: s.Host, Argv: s.Argv, Result: "ok", Output: trim(o)}
		switch {
		case e != nil && strings.Contains(o, timerGone):
			r.Result = "ok (already gone)"
		case e != nil:
			r.Result = "error: " + e.Error()
			errs = append(errs, fmt.Errorf("cancelling the heal timer (%s): %w; it will heal again when it fires", s, e))
		}
		rec(r)
		fmt.Fprintf(out, "%scancelled heal timer %s: %s\n", indent, s, r.Result)
	}
	return len(failed) > 0, errs
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func trim(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	return s
}
