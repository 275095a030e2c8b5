// Package container runs the reference management server and its hosts in Docker containers on a
// per-run user-defined network, built and driven with testcontainers-go, and injects the faults a
// container world has: a host's network disconnect (partition), pause (a hung agent whose kernel still
// ACKs TCP), stop/start (rolling restart), kill, a kill and restart of the management server (whose
// database survives it, as CloudStack's MySQL does), a rolling restart of every agent, and the hosts'
// guest faults (a guest powering itself off, slow router boots).
//
// The containers run one image built at run time FROM scratch with a static build of csconform
// (nothing is ever pulled). The management server is csc-<run>-ms (`csconform server`, its control
// endpoint published). A host's domains run in one of two ways (Options.Domains):
//
//   - real libvirt domains, where libvirtd's socket answers and the guest is built (ci/build-guest.sh):
//     the host is one container, csc-<run>-<host>-agent, `csconform agent --hypervisor libvirt`, with
//     the socket bind-mounted as cloudstack-agent has it, and the run's directory and the guest
//     bind-mounted at the same paths as on the host (libvirtd, on the host, opens the kernel, the
//     disks and the serial logs by those paths). Its domains are the libvirt driver's, named and
//     labelled for the run and host, so a restarted, killed or paused agent container leaves them
//     running, as a restarted cloudstack-agent does. The truth and the crash fault go to libvirtd
//     from the harness; Close also removes the run's domains and files (libvirt.Cleanup).
//   - simulated domains otherwise: two containers per host, csc-<run>-<host>-hv (`csconform
//     hypervisor`, simulated domains served to the agent on a unix socket in a per-run volume, and to
//     the harness — the truth: GET /domains; the crash fault — on a published port; never faulted)
//     and csc-<run>-<host>-agent (`csconform agent --hypervisor unix:…`).
//
// The management server is csc-<run>-ms (`csconform server`, its control endpoint published),
// whose control endpoint answers only with the run's token (Cluster.Control sends it) and whose
// database is its --state file in the container's writable layer (serverState): it survives a
// kill and start of the same container, and goes with the container.
// Every published port is published on the host's 127.0.0.1 only.
// The faults act on the agent containers. Everything a run creates in Docker (image, network,
// volume, containers) carries the label org.csconform.run=<run>; Cleanup removes exactly that, and
// CleanupAll every run's.
package container

import (
	"bytes"
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/csconform/csconform/drivers/control"
	"github.com/csconform/csconform/drivers/libvirt"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	mnet "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcnet "github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Labels on everything a run creates.
const (
	LabelRun  = "org.csconform.run"
	LabelRole = "org.csconform.role" // image, network, volume, server, agent, hypervisor
	LabelHost = "org.csconform.host"
	imageRepo = "csconform-harness"
)

// Ports inside the containers.
const (
	controlPort = "8096/tcp"
	truthPort   = "8097/tcp"
	faultsPort  = "8098/tcp"
	agentPort   = "8250"
)

// publishedOn is the host address every published port is bound to: the run's endpoints (control,
// truth, fault hooks) are for the harness on this machine, not for the network.
var publishedOn = netip.MustParseAddr("127.0.0.1")

// serverState is the management server's database inside its container.
const serverState = "/var/lib/csconform/db.json"

// serverHistory is the management server's --history file beside its state: every event it records
// (state changes with their threads, locks, jobs, its log lines), appended to across restarts of
// its container, read out at the end of a run (ServerHistory) for the checks that judge the server's
// own writes.
const serverHistory = "/var/lib/csconform/history.jsonl"

func init() {
	// No registry is reachable: Ryuk (an image to pull) must stay off; the harness cleans up by label.
	setDefaultEnv("TESTCONTAINERS_RYUK_DISABLED", "true")
	setDefaultEnv("TESTCONTAINERS_HOST_OVERRIDE", "localhost")
}

func setDefaultEnv(k, v string) {
	if os.Getenv(k) == "" {
		os.Setenv(k, v)
	}
}

// Options say what to start.
type Options struct {
	Run     string            // labels and names everything (required)
	Hosts   []string          // host ids (default h1)
	Profile string            // server --profile (default cloudstack-4.22)
	Defects string            // server --defects, instead of the profile
	Config  map[string]string // server --config overrides
	Log     io.Writer         // progress lines (nil: none)
	Verbose bool              // server --verbose (its DEBUG lines, e.g. "Sending StartCommand", in its log)

	// Domains says where the hosts' domains run: DomainsAuto ("", real libvirt domains where
	// LibvirtUsable says so, else simulated), DomainsLibvirt (an error where they cannot) or
	// DomainsSimulated.
	Domains string
	// For libvirt domains: the run files' base directory and the guest ("" = the libvirt driver's
	// defaults), and a router's boot delay after reaching userspace (0 = 1 s, as simulated hosts').
	BaseDir, GuestDir string
	RouterBoot        time.Duration
}

// Options.Domains values.
const (
	DomainsAuto      = "auto"
	DomainsLibvirt   = "libvirt"
	DomainsSimulated = "simulated"
)

// LibvirtSocket is libvirtd's socket, mounted into every agent container at the same path.
const LibvirtSocket = "/var/run/libvirt/libvirt-sock"

// LibvirtUsable says why the agents cannot drive real domains here (nil: they can): libvirtd must
// answer on LibvirtSocket and the guest must be built.
func LibvirtUsable(guestDir string) error {
	if _, err := os.Stat(LibvirtSocket); err != nil {
		return fmt.Errorf("no libvirtd socket at %s", LibvirtSocket)
	}
	return libvirt.Available("qemu:///system?socket="+LibvirtSocket, guestDir)
}

// Cluster is one run's containers.
type Cluster struct {
	Run   string
	Image string
	o     Options
	cli   *testcontainers.DockerClient
	net   *testcontainers.DockerNetwork
	vol   string
	ms    testcontainers.Container
	hosts map[string]*Host

	// Libvirt: the hosts' domains are real (libvirtd), else simulated; DomainsWhy says which and why.
	Libvirt    bool
	DomainsWhy string
	virtType   string

	mu      sync.Mutex
	control string // http://127.0.0.1:PORT of the server's control endpoint
	token   string // the control endpoint's token, and the fault hooks' (never logged)
	key     string // the agent key of the server and its agents (never logged)
	faults  map[string]func(context.Context) error
}

// Host is one host's containers.
type Host struct {
	ID    string
	Agent testcontainers.Container
	HV    testcontainers.Container // simulated domains only
	truth string                   // http://127.0.0.1:PORT of the hypervisor (simulated domains)
	lv    *libvirt.Host            // the harness's own view of the host's libvirt domains (libvirt)
}

// Available says whether a Docker daemon answers (the reason if not).
func Available(ctx context.Context) error {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return err
	}
	return cli.Close()
}

func (c *Cluster) logf(format string, args ...any) {
	if c.o.Log != nil {
		fmt.Fprintf(c.o.Log, "csconform container: "+format+"\n", args...)
	}
}

// Start builds the image, creates the network and the volume, and starts the server and every host.
// On error everything created so far is removed.
func Start(ctx context.Context, o Options) (c *Cluster, err error) {
	if o.Run == "" {
		return nil, errors.New("container: Options.Run is required")
	}
	if o.Log == nil {
		tclog.SetDefault(tclog.NewNoopLogger()) // testcontainers' own chatter: nobody asked for progress
	}
	if len(o.Hosts) == 0 {
		o.Hosts = []string{"h1"}
	}
	if o.Profile == "" {
		o.Profile = "cloudstack-4.22"
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	c = &Cluster{Run: o.Run, o: o, cli: cli, hosts: map[string]*Host{}, faults: map[string]func(context.Context) error{}, token: newToken(), key: newToken()}
	defer func() {
		if err != nil {
			c.Close()
			c = nil
		}
	}()
	t0 := time.Now()
	if err = c.chooseDomains(); err != nil {
		return c, err
	}
	if c.Image, err = c.buildImage(ctx); err != nil {
		return c, fmt.Errorf("image: %w", err)
	}
	c.logf("run %s: image %s built FROM scratch in %s", c.Run, c.Image, time.Since(t0).Round(time.Millisecond))
	c.net, err = tcnet.New(ctx, tcnet.WithLabels(c.labels("network", "")))
	if err != nil {
		return c, fmt.Errorf("network: %w", err)
	}
	c.vol = "csc-" + c.Run + "-sockets"
	if _, err = cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: c.vol, Labels: c.labels("volume", "")}); err != nil {
		return c, fmt.Errorf("volume: %w", err)
	}
	// The control endpoint listens only on the server's address on the run's network (its alias ms),
	// where the published port leads: agents need only the agent port.
	args := []string{"server", "--listen", "0.0.0.0:" + agentPort, "--control", "ms:8096", "--control-any-address", "--state", serverState,
		"--history", serverHistory}
	if o.Verbose {
		args = append(args, "--verbose")
	}
	args = append(args, c.switchArgs()...)
	keys := make([]string, 0, len(o.Config))
	for k := range o.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--config", k+"="+o.Config[k])
	}
	c.ms, err = c.run(ctx, "ms", "server", "", args, map[string]string{control.EnvToken: c.token, control.EnvAgentKey: c.key}, []string{controlPort}, "control listening")
	if err != nil {
		return c, fmt.Errorf("management server: %w", err)
	}
	if err = c.refreshControl(ctx); err != nil {
		return c, err
	}
	for _, h := range o.Hosts {
		if err = c.startHost(ctx, h); err != nil {
			return c, fmt.Errorf("host %s: %w", h, err)
		}
	}
	c.logf("run %s: server %s, hosts %v on network %s in %s; %s", c.Run, c.control, o.Hosts, c.net.Name, time.Since(t0).Round(time.Millisecond), c.DomainsWhy)
	return c, nil
}

// writable says whether run files can be made under dir (the harness runs as root for libvirt).
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("run files: %w", err)
	}
	f, err := os.CreateTemp(dir, ".probe-")
	if err != nil {
		return fmt.Errorf("run files: %w", err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// chooseDomains settles Options.Domains: real libvirt domains or simulated ones, and why.
func (c *Cluster) chooseDomains() error {
	o := &c.o
	switch o.Domains {
	case "", DomainsAuto, DomainsLibvirt, DomainsSimulated:
	default:
		return fmt.Errorf("container: Options.Domains %q: want %s, %s or %s", o.Domains, DomainsAuto, DomainsLibvirt, DomainsSimulated)
	}
	if o.Domains == DomainsSimulated {
		c.DomainsWhy = "SIMULATED domains (csconform hypervisor container per host; simulated domains were asked for)"
		return nil
	}
	if o.BaseDir == "" {
		o.BaseDir = libvirt.DefaultBaseDir()
	}
	err := LibvirtUsable(o.GuestDir)
	if err == nil {
		err = writable(o.BaseDir)
	}
	if err != nil {
		if o.Domains == DomainsLibvirt {
			return fmt.Errorf("container: libvirt domains asked for, but %v", err)
		}
		c.DomainsWhy = fmt.Sprintf("SIMULATED domains (csconform hypervisor container per host; no libvirt: %v)", err)
		return nil
	}
	if o.GuestDir == "" {
		o.GuestDir = libvirt.DefaultGuestDir()
	}
	if o.RouterBoot <= 0 {
		o.RouterBoot = time.Second
	}
	vt, err := libvirt.DetectVirtType("", o.GuestDir, o.BaseDir)
	if err != nil {
		return fmt.Errorf("container: libvirt: %w", err)
	}
	c.Libvirt, c.virtType = true, vt
	c.DomainsWhy = fmt.Sprintf("REAL libvirt domains (QEMU %s: %s; libvirtd's socket mounted into each agent container, run files in %s)",
		vt, libvirt.VirtTypeReason(), libvirt.RunDir(o.BaseDir, c.Run))
	return nil
}

func (c *Cluster) labels(role, host string) map[string]string {
	l := map[string]string{LabelRun: c.Run, LabelRole: role}
	if host != "" {
		l[LabelHost] = host
	}
	return l
}

// buildImage puts a static csconform in an image FROM scratch holding only it.
func (c *Cluster) buildImage(ctx context.Context) (string, error) {
	dir, err := os.MkdirTemp("", "csc-image-"+c.Run+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := imageBinary(ctx, filepath.Join(dir, "csconform")); err != nil {
		return "", err
	}
	df := "FROM scratch\nCOPY csconform /csconform\nENTRYPOINT [\"/csconform\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		return "", err
	}
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return "", err
	}
	defer p.Close()
	var logb bytes.Buffer
	req := &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
		Context: dir, Repo: imageRepo, Tag: c.Run, KeepImage: false, BuildLogWriter: &logb,
		BuildOptionsModifier: func(b *client.ImageBuildOptions) {
			b.Labels = c.labels("image", "")
			b.PullParent = false // FROM scratch: nothing to pull, and nothing may be
			b.Remove, b.ForceRemove = true, true
		},
	}}
	tag, err := p.BuildImage(ctx, req)
	if err != nil {
		return "", fmt.Errorf("%w\n%s", err, logb.String())
	}
	return tag, nil
}

// imageBinary writes the csconform the containers run to out. It is the running binary when that is
// csconform and statically linked (go install with CGO_ENABLED=0, or a -trimpath build copied
// anywhere): the containers then run exactly this version, and no source tree or Go toolchain is
// needed. A test binary, or a csconform linked against libc, builds one from the module's source.
func imageBinary(ctx context.Context, out string) error {
	exe, err := os.Executable()
	if err == nil && !strings.HasSuffix(filepath.Base(exe), ".test") {
		static, serr := isStatic(exe)
		if serr == nil && static {
			return copyFile(exe, out)
		}
		if berr := buildStatic(ctx, out); berr != nil {
			why := "it is dynamically linked"
			if serr != nil {
				why = serr.Error()
			}
			return fmt.Errorf("the containers run this csconform binary (%s), but %s and it cannot be built from source (%v): "+
				"install a static one: CGO_ENABLED=0 go install github.com/csconform/csconform/cmd/csconform@latest", exe, why, berr)
		}
		return nil
	}
	return buildStatic(ctx, out)
}

// isStatic says whether an ELF executable needs no dynamic loader (no PT_INTERP), so it runs in an
// image FROM scratch.
func isStatic(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, fmt.Errorf("not an ELF executable: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	o, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}

// buildStatic builds ./cmd/csconform with CGO_ENABLED=0 from this module's source.
func buildStatic(ctx context.Context, out string) error {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return errors.New("cannot locate the module source")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return fmt.Errorf("module source not found at %s (the container driver builds csconform from it): %v", root, err)
	}
	gobin := "go"
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		gobin = p
	}
	cmd := exec.CommandContext(ctx, gobin, "build", "-trimpath", "-o", out, "./cmd/csconform")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("CGO_ENABLED=0 go build ./cmd/csconform: %v\n%s", err, b)
	}
	return nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// newToken makes a run's control token.
func newToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// portBindings publishes each of ports on publishedOn, on a free port of the host.
func portBindings(ports []string) (mnet.PortMap, error) {
	bindings := mnet.PortMap{}
	for _, p := range ports {
		pp, err := mnet.ParsePort(p)
		if err != nil {
			return nil, err
		}
		bindings[pp] = []mnet.PortBinding{{HostIP: publishedOn}} // HostPort "": any free port
	}
	return bindings, nil
}

// run starts one container of the run on its network, with env, the run's volume and extra mounts;
// its ports are published on publishedOn only.
func (c *Cluster) run(ctx context.Context, name, role, host string, args []string, env map[string]string, ports []string, ready string, extra ...mount.Mount) (testcontainers.Container, error) {
	bindings, err := portBindings(ports)
	if err != nil {
		return nil, err
	}
	req := testcontainers.ContainerRequest{
		Image:          c.Image,
		Name:           "csc-" + c.Run + "-" + name,
		Cmd:            args,
		Env:            env,
		ExposedPorts:   ports,
		Labels:         c.labels(role, host),
		Networks:       []string{c.net.Name},
		NetworkAliases: map[string][]string{c.net.Name: {name}},
		WaitingFor:     wait.ForLog(ready).WithStartupTimeout(30 * time.Second),
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.PortBindings = bindings
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Source: c.vol, Target: "/run/csc"})
			hc.Mounts = append(hc.Mounts, extra...)
		},
	}
	return testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: req, Started: true})
}

func (c *Cluster) startHost(ctx context.Context, h string) error {
	if c.Libvirt {
		return c.startLibvirtHost(ctx, h)
	}
	sock := "/run/csc/" + h + ".sock"
	hv, err := c.run(ctx, h+"-hv", "hypervisor", h, []string{"hypervisor", "--host", h, "--socket", sock, "--listen", "0.0.0.0:8097"}, c.hookEnv(), []string{truthPort}, "simulated domains")
	hst := &Host{ID: h, HV: hv}
	c.hosts[h] = hst
	if err != nil {
		return err
	}
	if hst.truth, err = endpoint(ctx, hv, truthPort); err != nil {
		return err
	}
	hst.Agent, err = c.run(ctx, h+"-agent", "agent", h, append([]string{"agent", "--host", h, "--server", "ms:" + agentPort, "--hypervisor", "unix:" + sock, "--faults", "0.0.0.0:8098"}, c.switchArgs()...),
		c.agentEnv(), []string{faultsPort}, "agent "+h+": management server")
	return err
}

// hookEnv is a hypervisor container's environment: the token of its fault hooks.
func (c *Cluster) hookEnv() map[string]string { return map[string]string{control.EnvToken: c.token} }

// agentEnv is an agent container's environment: the agent key and the token of its fault hook.
func (c *Cluster) agentEnv() map[string]string {
	return map[string]string{control.EnvToken: c.token, control.EnvAgentKey: c.key}
}

// switchArgs are the profile's flags, the same for the server and every agent (C6 is the agent's).
func (c *Cluster) switchArgs() []string {
	if c.o.Defects != "" {
		return []string{"--defects", c.o.Defects}
	}
	return []string{"--profile", c.o.Profile}
}

// startLibvirtHost starts a host whose agent drives real domains through libvirtd's mounted socket.
// The harness's own connection for the host (truth, crash) makes the run's directory first: a bind
// mount needs its source.
func (c *Cluster) startLibvirtHost(ctx context.Context, h string) error {
	lv, err := libvirt.New("", h, libvirt.Options{Run: c.Run, BaseDir: c.o.BaseDir, GuestDir: c.o.GuestDir, VirtType: c.virtType})
	hst := &Host{ID: h, lv: lv}
	c.hosts[h] = hst
	if err != nil {
		return err
	}
	same := func(p string, ro bool) mount.Mount {
		return mount.Mount{Type: mount.TypeBind, Source: p, Target: p, ReadOnly: ro}
	}
	hst.Agent, err = c.run(ctx, h+"-agent", "agent", h, append([]string{"agent", "--host", h, "--server", "ms:" + agentPort,
		"--hypervisor", "libvirt", "--run", c.Run, "--run-dir", c.o.BaseDir, "--guest-dir", c.o.GuestDir,
		"--virt-type", c.virtType, "--router-boot", c.o.RouterBoot.String(), "--faults", "0.0.0.0:8098"}, c.switchArgs()...),
		c.agentEnv(), []string{faultsPort}, "agent "+h+": management server",
		same(LibvirtSocket, false), same(lv.RunDir(), false), same(c.o.GuestDir, true))
	return err
}

func endpoint(ctx context.Context, ct testcontainers.Container, port string) (string, error) {
	p, err := ct.MappedPort(ctx, port)
	if err != nil {
		return "", err
	}
	return "http://" + publishedOn.String() + ":" + p.Port(), nil
}

func (c *Cluster) refreshControl(ctx context.Context) error {
	u, err := endpoint(ctx, c.ms, controlPort)
	if err != nil {
		return fmt.Errorf("control endpoint: %w", err)
	}
	c.mu.Lock()
	c.control = u
	c.mu.Unlock()
	return nil
}

// HostIDs lists the hosts.
func (c *Cluster) HostIDs() []string { return append([]string(nil), c.o.Hosts...) }

// ---- the server's control endpoint and the hypervisors' truth

// Control calls a command of the server's control endpoint, with the run's token, and decodes its
// JSON answer into out.
func (c *Cluster) Control(ctx context.Context, cmd string, params url.Values, out any) error {
	c.mu.Lock()
	base := c.control
	c.mu.Unlock()
	return control.Call(ctx, base, c.token, cmd, params, out)
}

// Domain is one running domain of a host, as its hypervisor (libvirtd, or the simulated one) says.
type Domain struct {
	Name  string   `json:"name"`
	Type  string   `json:"type"`
	IPs   []string `json:"ips"`
	Disks []string `json:"disks"`
}

// Domains reads a host's running domains from its hypervisor (never from the agent): from libvirtd
// by the run's and host's label, or from the hypervisor container.
func (c *Cluster) Domains(ctx context.Context, h string) ([]Domain, error) {
	hst, ok := c.hosts[h]
	if !ok {
		return nil, fmt.Errorf("no host %q", h)
	}
	if hst.lv != nil {
		infos, err := hst.lv.Domains()
		if err != nil {
			return nil, err
		}
		ds := []Domain{}
		for _, d := range infos {
			if d.Running {
				ds = append(ds, Domain{Name: d.Name, IPs: d.IPs, Disks: d.Disks})
			}
		}
		return ds, nil
	}
	var ds []Domain
	err := control.Do(ctx, hst.truth+"/domains", "GET", "", &ds)
	return ds, err
}

// CrashDomain kills a domain's simulated QEMU (detail FAILED) or panics its guest (CRASHED); with
// libvirt domains it kills the domain's QEMU (kill -9: libvirt says STOPPED/FAILED whatever detail).
func (c *Cluster) CrashDomain(ctx context.Context, h, dom, detail string) error {
	hst, ok := c.hosts[h]
	if !ok {
		return fmt.Errorf("no host %q", h)
	}
	if hst.lv != nil {
		return hst.lv.Crash(dom)
	}
	return control.Do(ctx, hst.truth+"/crash?"+url.Values{"name": {dom}, "detail": {detail}}.Encode(), "POST", c.token, nil)
}

// DelayNextOutOfBand makes the next out-of-band report of h reach the server d late (the agent's
// fault hook).
func (c *Cluster) DelayNextOutOfBand(ctx context.Context, h string, d time.Duration) error {
	hst, ok := c.hosts[h]
	if !ok {
		return fmt.Errorf("no host %q", h)
	}
	u, err := endpoint(ctx, hst.Agent, faultsPort) // the port changes when the container restarts
	if err != nil {
		return err
	}
	return control.Do(ctx, u+"/delayNextOutOfBand?"+url.Values{"d": {d.String()}}.Encode(), "POST", c.token, nil)
}

// Logs returns a container's output (for a failing run's report).
func (c *Cluster) Logs(ctx context.Context, ct testcontainers.Container) string {
	if ct == nil {
		return ""
	}
	rc, err := ct.Logs(ctx)
	if err != nil {
		return err.Error()
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return string(b)
}

// ServerHistory reads the management server's history file out of its container.
func (c *Cluster) ServerHistory(ctx context.Context) ([]byte, error) {
	if c.ms == nil {
		return nil, fmt.Errorf("no management server container")
	}
	rc, err := c.ms.CopyFileFromContainer(ctx, serverHistory)
	if err != nil {
		return nil, fmt.Errorf("reading the server's history %s from its container: %w", serverHistory, err)
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// ServerLogs is the management server's output.
func (c *Cluster) ServerLogs(ctx context.Context) string { return c.Logs(ctx, c.ms) }

// ---- teardown

// Close heals every fault still active and removes everything of the run (by label): its containers
// first, so no agent acts any more, then — with libvirt domains — the run's domains and files. It
// uses its own context, so it also works after the run's context was cancelled (Ctrl-C).
func (c *Cluster) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c.HealAll(ctx)
	var errs []error
	if c.cli != nil {
		removed, err := Cleanup(ctx, c.Run)
		if err != nil {
			errs = append(errs, err)
		}
		c.logf("run %s cleaned up: %s", c.Run, strings.Join(removed, ", "))
		errs = append(errs, c.cli.Close())
	}
	if c.Libvirt {
		for _, hst := range c.hosts {
			if hst.lv != nil {
				hst.lv.Close()
			}
		}
		removed, err := libvirt.Cleanup("", c.o.BaseDir, c.Run)
		if err != nil {
			errs = append(errs, err)
		}
		c.logf("run %s: libvirt domains and files removed: %s", c.Run, strings.Join(removed, ", "))
	}
	return errors.Join(errs...)
}
