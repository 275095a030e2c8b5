// Package container runs the reference management server and its hosts in Docker containers on a
// per-run user-defined network, built and driven with testcontainers-go, and injects the faults a
// container world has: a host's network disconnect (partition), pause (a hung agent whose kernel still
// ACKs TCP), stop/start (rolling restart), kill, a kill and restart of the management server (whose
// database survives it, as CloudStack's MySQL does), a rolling restart of every agent, and the hosts'
// guest faults (a guest powering itself off, slow router boots).
//
// Each host is two containers from one image built at run time FROM scratch with a static build of
// csconform (nothing is ever pulled):
//
//   - csc-<run>-<host>-hv: `csconform hypervisor`, the host's simulated domains (no libvirt), serving
//     the agent on a unix socket in a per-run volume — as libvirtd serves cloudstack-agent through its
//     mounted socket — and the harness (the truth: GET /domains; the crash fault) on a published port.
//     It is never faulted, so a restarted, killed or paused agent leaves its domains running.
//   - csc-<run>-<host>-agent: `csconform agent --hypervisor unix:…`, on the run's network, where the
//     faults act.
//
// and the management server is csc-<run>-ms (`csconform server`, its control endpoint published),
// whose database is its --state file in the container's writable layer (serverState): it survives a
// kill and start of the same container, and goes with the container.
// Everything a run creates (image, network, volume, containers) carries the label
// org.csconform.run=<run>; Cleanup removes exactly that, and CleanupAll every run's.
package container

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
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

// serverState is the management server's database inside its container.
const serverState = "/var/lib/csconform/db.json"

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

	mu      sync.Mutex
	control string // http://localhost:PORT of the server's control endpoint
	faults  map[string]func(context.Context) error
}

// Host is one host's containers.
type Host struct {
	ID    string
	Agent testcontainers.Container
	HV    testcontainers.Container
	truth string // http://localhost:PORT of the hypervisor
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
	c = &Cluster{Run: o.Run, o: o, cli: cli, hosts: map[string]*Host{}, faults: map[string]func(context.Context) error{}}
	defer func() {
		if err != nil {
			c.Close()
			c = nil
		}
	}()
	t0 := time.Now()
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
	args := []string{"server", "--listen", "0.0.0.0:" + agentPort, "--control", "0.0.0.0:8096", "--state", serverState}
	if o.Verbose {
		args = append(args, "--verbose")
	}
	if o.Defects != "" {
		args = append(args, "--defects", o.Defects)
	} else {
		args = append(args, "--profile", o.Profile)
	}
	keys := make([]string, 0, len(o.Config))
	for k := range o.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--config", k+"="+o.Config[k])
	}
	c.ms, err = c.run(ctx, "ms", "server", "", args, []string{controlPort}, "control listening")
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
	c.logf("run %s: server %s, hosts %v on network %s (simulated domains, no libvirt) in %s", c.Run, c.control, o.Hosts, c.net.Name, time.Since(t0).Round(time.Millisecond))
	return c, nil
}

func (c *Cluster) labels(role, host string) map[string]string {
	l := map[string]string{LabelRun: c.Run, LabelRole: role}
	if host != "" {
		l[LabelHost] = host
	}
	return l
}

// buildImage builds csconform statically and an image FROM scratch holding only it.
func (c *Cluster) buildImage(ctx context.Context) (string, error) {
	dir, err := os.MkdirTemp("", "csc-image-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := buildStatic(ctx, filepath.Join(dir, "csconform")); err != nil {
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

// run starts one container of the run on its network.
func (c *Cluster) run(ctx context.Context, name, role, host string, args, ports []string, ready string) (testcontainers.Container, error) {
	req := testcontainers.ContainerRequest{
		Image:          c.Image,
		Name:           "csc-" + c.Run + "-" + name,
		Cmd:            args,
		ExposedPorts:   ports,
		Labels:         c.labels(role, host),
		Networks:       []string{c.net.Name},
		NetworkAliases: map[string][]string{c.net.Name: {name}},
		WaitingFor:     wait.ForLog(ready).WithStartupTimeout(30 * time.Second),
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Source: c.vol, Target: "/run/csc"})
		},
	}
	return testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: req, Started: true})
}

func (c *Cluster) startHost(ctx context.Context, h string) error {
	sock := "/run/csc/" + h + ".sock"
	hv, err := c.run(ctx, h+"-hv", "hypervisor", h, []string{"hypervisor", "--host", h, "--socket", sock, "--listen", "0.0.0.0:8097"}, []string{truthPort}, "simulated domains")
	hst := &Host{ID: h, HV: hv}
	c.hosts[h] = hst
	if err != nil {
		return err
	}
	if hst.truth, err = endpoint(ctx, hv, truthPort); err != nil {
		return err
	}
	hst.Agent, err = c.run(ctx, h+"-agent", "agent", h, []string{"agent", "--host", h, "--server", "ms:" + agentPort, "--hypervisor", "unix:" + sock, "--faults", "0.0.0.0:8098"},
		[]string{faultsPort}, "agent "+h+": management server")
	return err
}

func endpoint(ctx context.Context, ct testcontainers.Container, port string) (string, error) {
	p, err := ct.MappedPort(ctx, port)
	if err != nil {
		return "", err
	}
	return "http://localhost:" + p.Port(), nil
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

// Control calls a command of the server's control endpoint and decodes its JSON answer into out.
func (c *Cluster) Control(ctx context.Context, cmd string, params url.Values, out any) error {
	c.mu.Lock()
	base := c.control
	c.mu.Unlock()
	return getJSON(ctx, base+"/"+cmd+"?"+params.Encode(), "GET", out)
}

var httpc = &http.Client{Timeout: 15 * time.Minute}

func getJSON(ctx context.Context, u, method string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return &APIError{Msg: e.Error}
		}
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// APIError is an error the endpoint answered with (as opposed to one reaching it).
type APIError struct{ Msg string }

func (e *APIError) Error() string { return e.Msg }

// Domain is one running simulated domain of a host, as its hypervisor says.
type Domain struct {
	Name  string   `json:"name"`
	Type  string   `json:"type"`
	IPs   []string `json:"ips"`
	Disks []string `json:"disks"`
}

// Domains reads a host's running domains from its hypervisor (never from the agent).
func (c *Cluster) Domains(ctx context.Context, h string) ([]Domain, error) {
	hst, ok := c.hosts[h]
	if !ok {
		return nil, fmt.Errorf("no host %q", h)
	}
	var ds []Domain
	err := getJSON(ctx, hst.truth+"/domains", "GET", &ds)
	return ds, err
}

// CrashDomain kills a domain's simulated QEMU (detail FAILED) or panics its guest (CRASHED).
func (c *Cluster) CrashDomain(ctx context.Context, h, dom, detail string) error {
	hst, ok := c.hosts[h]
	if !ok {
		return fmt.Errorf("no host %q", h)
	}
	return getJSON(ctx, hst.truth+"/crash?"+url.Values{"name": {dom}, "detail": {detail}}.Encode(), "POST", nil)
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
	return getJSON(ctx, u+"/delayNextOutOfBand?"+url.Values{"d": {d.String()}}.Encode(), "POST", nil)
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

// ServerLogs is the management server's output.
func (c *Cluster) ServerLogs(ctx context.Context) string { return c.Logs(ctx, c.ms) }

// ---- teardown

// Close heals every fault still active and removes everything of the run (by label). It uses its
// own context, so it also works after the run's context was cancelled (Ctrl-C).
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
	return errors.Join(errs...)
}
