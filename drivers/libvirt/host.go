package libvirt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/csconform/csconform/impl"
)

// DefaultURI is the libvirtd the driver talks to unless told otherwise.
const DefaultURI = "qemu:///system"

// Options tune a Host. The zero value is usable.
type Options struct {
	// Run names this harness run; every domain and file of the run carries it. Default: $CSCONFORM_RUN,
	// else one made from the clock.
	Run string
	// BaseDir holds one directory per run (volume files, serial logs). Default: $CSCONFORM_RUN_DIR,
	// else /var/lib/csconform.
	BaseDir string
	// GuestDir holds vmlinuz and initramfs.cpio.gz from ci/build-guest.sh. Default: $CSCONFORM_GUEST_DIR,
	// else /var/cache/csconform/guest.
	GuestDir string
	// BootDelay is the guest's wait between reaching userspace and saying "ready" (csc.delay). Default:
	// 36 s for a DomainRouter, none for others (a user guest's own boot, ~6 s under TCG, is its delay).
	BootDelay func(spec impl.DomainSpec) time.Duration
	// Lifetime powers the guest off this long after "ready" (csc.life); nil or 0 means forever.
	Lifetime func(spec impl.DomainSpec) time.Duration
	// VirtType forces "kvm" or "qemu" (TCG). Default: $CSCONFORM_VIRT_TYPE, else detected once per
	// process (see DetectVirtType).
	VirtType string
	// DiskMiB is the virtual size of a volume file the driver creates. Default 64.
	DiskMiB int
}

// MinMemoryMiB is the least memory a guest gets (the initramfs lives in RAM).
const MinMemoryMiB = 96

// DefaultBootDelay is Options.BootDelay's default.
func DefaultBootDelay(spec impl.DomainSpec) time.Duration {
	if spec.Type == "DomainRouter" {
		return 36 * time.Second
	}
	return 0
}

func (o Options) withDefaults() Options {
	if o.Run == "" {
		o.Run = os.Getenv("CSCONFORM_RUN")
	}
	if o.Run == "" {
		o.Run = "r" + strconv.FormatInt(time.Now().UnixMilli()%(36*36*36*36*36*36), 36)
	}
	if o.BaseDir == "" {
		o.BaseDir = DefaultBaseDir()
	}
	if o.GuestDir == "" {
		o.GuestDir = DefaultGuestDir()
	}
	if o.BootDelay == nil {
		o.BootDelay = DefaultBootDelay
	}
	if o.DiskMiB <= 0 {
		o.DiskMiB = 64
	}
	return o
}

// DefaultBaseDir is where runs keep their files: $CSCONFORM_RUN_DIR or /var/lib/csconform.
func DefaultBaseDir() string {
	if d := os.Getenv("CSCONFORM_RUN_DIR"); d != "" {
		return d
	}
	return "/var/lib/csconform"
}

// DefaultGuestDir is where ci/build-guest.sh puts the guest: $CSCONFORM_GUEST_DIR or
// /var/cache/csconform/guest.
func DefaultGuestDir() string {
	if d := os.Getenv("CSCONFORM_GUEST_DIR"); d != "" {
		return d
	}
	return "/var/cache/csconform/guest"
}

// RunDir is a run's directory under a base directory.
func RunDir(base, run string) string { return filepath.Join(base, namePart(run)) }

// runLabelFile marks a directory as made by csconform, so Cleanup removes it and nothing else.
const runLabelFile = ".csconform-run"

// Host is one CloudStack host's hypervisor on a (possibly shared) libvirtd: it sees and touches only
// the domains named with its prefix csc-<run>-<host>- and labelled in their metadata.
type Host struct {
	HostID   string
	Run      string
	opts     Options
	uri      string
	lv       *golibvirt.Libvirt
	virtType string
	prefix   string
	runDir   string

	mu        sync.Mutex
	listeners []func(impl.LifecycleEvent)
	events    context.CancelFunc
}

var _ impl.Hypervisor = (*Host)(nil)

// connect opens a libvirt connection for a URI such as qemu:///system.
func connect(uri string) (*golibvirt.Libvirt, error) {
	if uri == "" {
		uri = DefaultURI
	}
	lv, err := Connect(uri)
	if err != nil {
		return nil, fmt.Errorf("cannot reach libvirtd at %s (%v): as root run ci/setup-libvirt.sh", uri, err)
	}
	return lv, nil
}

// New connects one host to libvirtd at uri ("" for qemu:///system). The guest must have been built
// (ci/build-guest.sh); the virtualisation type is detected on first use in the process.
func New(uri, hostID string, opts Options) (*Host, error) {
	if hostID == "" {
		return nil, errors.New("libvirt driver: empty host id")
	}
	opts = opts.withDefaults()
	if uri == "" {
		uri = DefaultURI
	}
	for _, f := range []string{"vmlinuz", "initramfs.cpio.gz"} {
		if !fileExists(filepath.Join(opts.GuestDir, f)) {
			return nil, fmt.Errorf("libvirt driver: guest not built: %s missing (run ci/build-guest.sh)",
				filepath.Join(opts.GuestDir, f))
		}
	}
	lv, err := connect(uri)
	if err != nil {
		return nil, err
	}
	h := &Host{HostID: hostID, Run: opts.Run, opts: opts, uri: uri, lv: lv,
		prefix: hostPrefix(opts.Run, hostID), runDir: RunDir(opts.BaseDir, opts.Run)}
	if err := os.MkdirAll(h.runDir, 0o755); err != nil {
		_ = lv.Disconnect()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(h.runDir, runLabelFile), []byte(opts.Run+"\n"), 0o644); err != nil {
		_ = lv.Disconnect()
		return nil, err
	}
	h.virtType = opts.VirtType
	if h.virtType == "" {
		h.virtType, err = DetectVirtType(uri, opts.GuestDir, opts.BaseDir)
		if err != nil {
			_ = lv.Disconnect()
			return nil, err
		}
	}
	return h, nil
}

// VirtType is "kvm" or "qemu" (TCG): what this host's domains run on.
func (h *Host) VirtType() string { return h.virtType }

// DomainName is the libvirt name of one of this host's domains.
func (h *Host) DomainName(name string) string { return h.prefix + name }

// RunDir is this run's directory (volumes under volumes/, one directory per domain under domains/).
func (h *Host) RunDir() string { return h.runDir }

// VolumeFile is the file standing for a volume name; QEMU holds it open while a domain uses it.
func (h *Host) VolumeFile(volume string) (string, error) {
	return volumeFile(filepath.Join(h.runDir, "volumes"), volume)
}

func (h *Host) domainDir(name string) string {
	return filepath.Join(h.runDir, "domains", namePart(h.HostID), namePart(name))
}

// SerialLog is the file the guest's serial console is logged to.
func (h *Host) SerialLog(name string) string { return filepath.Join(h.domainDir(name), "serial.log") }

func (h *Host) serialSock(name string) string { return filepath.Join(h.domainDir(name), "serial.sock") }

// Close ends the event stream and the libvirt connection. Domains keep running.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.events != nil {
		h.events()
		h.events = nil
	}
	h.mu.Unlock()
	return h.lv.Disconnect()
}

func (h *Host) lookup(name string) (golibvirt.Domain, bool, error) {
	d, err := h.lv.DomainLookupByName(h.DomainName(name))
	if err != nil {
		if golibvirt.IsNotFound(err) {
			return d, false, nil
		}
		return d, false, err
	}
	return d, true, nil
}

func (h *Host) active(name string) bool {
	d, ok, err := h.lookup(name)
	if err != nil || !ok {
		return false
	}
	a, err := h.lv.DomainIsActive(d)
	return err == nil && a == 1
}

// Start creates a transient domain for spec and returns once it runs.
func (h *Host) Start(spec impl.DomainSpec) error {
	if !safeName.MatchString(spec.Name) {
		return fmt.Errorf("invalid domain name %q", spec.Name)
	}
	if d, ok, err := h.lookup(spec.Name); err != nil {
		return err
	} else if ok {
		if a, _ := h.lv.DomainIsActive(d); a == 1 {
			return fmt.Errorf("operation failed: domain '%s' already exists", spec.Name)
		}
		_ = h.lv.DomainUndefine(d) // a leftover definition
	}
	var disks []string
	for _, v := range spec.Disks {
		f, err := h.VolumeFile(v)
		if err != nil {
			return err
		}
		if fileExists(f + deletedSuffix) {
			return fmt.Errorf("Cannot access storage file '%s': No such file or directory", v)
		}
		if err := h.createVolume(f); err != nil {
			return err
		}
		disks = append(disks, f)
	}
	dir := h.domainDir(spec.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	_ = os.Remove(h.SerialLog(spec.Name))
	_ = os.Remove(h.serialSock(spec.Name))
	var life time.Duration
	if h.opts.Lifetime != nil {
		life = h.opts.Lifetime(spec)
	}
	mem := max(spec.MemoryMiB, MinMemoryMiB)
	x := domainXML{
		Name: h.DomainName(spec.Name), VirtType: h.virtType, MemoryMiB: mem,
		Kernel: filepath.Join(h.opts.GuestDir, "vmlinuz"), Initrd: filepath.Join(h.opts.GuestDir, "initramfs.cpio.gz"),
		Cmdline: guestCmdline(spec, h.opts.BootDelay(spec), life), Disks: disks,
		SerialSock: h.serialSock(spec.Name), SerialLog: h.SerialLog(spec.Name),
		Label: Label{Run: h.Run, Host: h.HostID, Name: spec.Name, Type: spec.Type, Dir: dir},
	}
	if _, err := h.lv.DomainCreateXML(x.String(), 0); err != nil {
		return fmt.Errorf("start %s: %w", spec.Name, err)
	}
	return nil
}

const deletedSuffix = ".deleted"

// createVolume makes the volume file once; a later start of the same volume reuses it.
func (h *Host) createVolume(f string) error {
	if fileExists(f) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return err
	}
	if strings.HasSuffix(f, ".qcow2") {
		return writeQcow2(f, int64(h.opts.DiskMiB)<<20)
	}
	fd, err := os.Create(f)
	if err != nil {
		return err
	}
	defer fd.Close()
	return fd.Truncate(int64(h.opts.DiskMiB) << 20)
}

// WaitReady parks until the guest's serial console says "csconform: ready NAME", the domain stops, or
// timeout passes (timeout <= 0 waits as long as the domain runs).
func (h *Host) WaitReady(name string, timeout time.Duration) error {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	log := h.SerialLog(name)
	for i := 0; ; i++ {
		// The log of a stopped domain still holds its ready line: ask libvirt first.
		if i%5 == 0 && !h.active(name) {
			if i == 0 {
				return fmt.Errorf("domain '%s' is not running", name)
			}
			return fmt.Errorf("domain '%s' stopped while booting", name)
		}
		if b, err := os.ReadFile(log); err == nil && readyLine(b, name) {
			return nil
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return fmt.Errorf("domain '%s' not ready after %s", name, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop destroys the domain and returns once libvirt no longer knows it. A missing domain is no error.
func (h *Host) Stop(name string) error {
	d, ok, err := h.lookup(name)
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	if err := h.lv.DomainDestroy(d); err != nil {
		var le golibvirt.Error
		// Already stopped (it shut down or crashed meanwhile): drop a definition if one is left.
		if !(errors.As(err, &le) && (le.Code == uint32(golibvirt.ErrOperationInvalid) || le.Code == uint32(golibvirt.ErrNoDomain))) {
			return fmt.Errorf("stop %s: %w", name, err)
		}
	}
	return h.waitGone(name, 60*time.Second)
}

func (h *Host) waitGone(name string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		d, ok, err := h.lookup(name)
		if err == nil && !ok {
			return nil
		}
		if err == nil {
			if a, _ := h.lv.DomainIsActive(d); a == 0 {
				_ = h.lv.DomainUndefine(d)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("domain '%s' still there %s after destroy", name, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Running lists this host's powered-on domains (agent names, without the prefix), sorted.
func (h *Host) Running() []string {
	doms, _, err := h.lv.ConnectListAllDomains(1, golibvirt.ConnectListDomainsActive)
	if err != nil {
		return nil
	}
	var names []string
	for _, d := range doms {
		n, ok := strings.CutPrefix(d.Name, h.prefix)
		if !ok {
			continue
		}
		// The name is not enough: the domain must carry this run's and host's label.
		md, err := h.lv.DomainGetMetadata(d, int32(golibvirt.DomainMetadataElement), golibvirt.OptString{MetadataNS}, 0)
		if err != nil {
			continue
		}
		if l, ok := parseLabel(md); ok && l.Run == h.Run && l.Host == h.HostID && l.Name == n {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// DeleteVolume removes a volume's file. It fails while a running domain (of any host in this libvirtd)
// has it as a disk, or while any process holds the file open.
func (h *Host) DeleteVolume(volume string) error {
	f, err := h.VolumeFile(volume)
	if err != nil {
		return err
	}
	if holders, err := domainsUsing(h.lv, f); err != nil {
		return err
	} else if len(holders) > 0 {
		return fmt.Errorf("failed to delete volume %s: image is in use by domain %s", volume, strings.Join(holders, ","))
	}
	if pids := pidsHolding(f); len(pids) > 0 {
		return fmt.Errorf("failed to delete volume %s: %s is held open by pid %v", volume, f, pids)
	}
	if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return err
	}
	return os.WriteFile(f+deletedSuffix, nil, 0o644)
}

// domainsUsing names the running domains whose XML has file as a disk source.
func domainsUsing(lv *golibvirt.Libvirt, file string) ([]string, error) {
	doms, _, err := lv.ConnectListAllDomains(1, golibvirt.ConnectListDomainsActive)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range doms {
		x, err := lv.DomainGetXMLDesc(d, 0)
		if err != nil {
			continue // gone meanwhile
		}
		dom, _, _, err := ParseDomain(x)
		if err != nil {
			continue
		}
		if slices.Contains(DiskSources(dom), file) {
			out = append(out, d.Name)
		}
	}
	return out, nil
}

// pidsHolding lists processes with file open (read from /proc/*/fd; complete when run as root).
func pidsHolding(file string) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	var pids []int
	for _, fd := range procs {
		if t, err := os.Readlink(fd); err == nil && t == file {
			pid, _ := strconv.Atoi(strings.Split(fd, "/")[2])
			if !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// Subscribe registers fn for this host's lifecycle events. The first call starts the event stream.
func (h *Host) Subscribe(fn func(impl.LifecycleEvent)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listeners = append(h.listeners, fn)
	if h.events != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := h.lv.LifecycleEvents(ctx)
	if err != nil {
		cancel()
		fmt.Fprintf(os.Stderr, "csconform libvirt %s: no lifecycle events: %v\n", h.HostID, err)
		return
	}
	h.events = cancel
	go func() {
		for m := range ch {
			name, ok := strings.CutPrefix(m.Dom.Name, h.prefix)
			if !ok {
				continue
			}
			ev, ok := lifecycle(m.Event, m.Detail)
			if !ok {
				continue
			}
			ev.Domain = name
			h.mu.Lock()
			ls := slices.Clone(h.listeners)
			h.mu.Unlock()
			for _, l := range ls {
				l(ev)
			}
		}
	}()
}

// Unsubscribe drops every listener and stops the event stream.
func (h *Host) Unsubscribe() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listeners = nil
	if h.events != nil {
		h.events()
		h.events = nil
	}
}

// lifecycle maps libvirt's event and detail numbers to the agent's names.
func lifecycle(event, detail int32) (impl.LifecycleEvent, bool) {
	switch golibvirt.DomainEventType(event) {
	case golibvirt.DomainEventStarted:
		d := map[golibvirt.DomainEventStartedDetailType]string{
			golibvirt.DomainEventStartedBooted: "BOOTED", golibvirt.DomainEventStartedMigrated: "MIGRATED",
			golibvirt.DomainEventStartedRestored: "RESTORED", golibvirt.DomainEventStartedFromSnapshot: "FROM_SNAPSHOT",
			golibvirt.DomainEventStartedWakeup: "WAKEUP"}[golibvirt.DomainEventStartedDetailType(detail)]
		return impl.LifecycleEvent{Event: "STARTED", Detail: d}, true
	case golibvirt.DomainEventStopped:
		d := map[golibvirt.DomainEventStoppedDetailType]string{
			golibvirt.DomainEventStoppedShutdown: "SHUTDOWN", golibvirt.DomainEventStoppedDestroyed: "DESTROYED",
			golibvirt.DomainEventStoppedCrashed: "CRASHED", golibvirt.DomainEventStoppedMigrated: "MIGRATED",
			golibvirt.DomainEventStoppedSaved: "SAVED", golibvirt.DomainEventStoppedFailed: "FAILED",
			golibvirt.DomainEventStoppedFromSnapshot: "FROM_SNAPSHOT"}[golibvirt.DomainEventStoppedDetailType(detail)]
		return impl.LifecycleEvent{Event: "STOPPED", Detail: d}, true
	case golibvirt.DomainEventShutdown:
		d := map[golibvirt.DomainEventShutdownDetailType]string{
			golibvirt.DomainEventShutdownFinished: "FINISHED", golibvirt.DomainEventShutdownGuest: "GUEST",
			golibvirt.DomainEventShutdownHost: "HOST"}[golibvirt.DomainEventShutdownDetailType(detail)]
		return impl.LifecycleEvent{Event: "SHUTDOWN", Detail: d}, true
	}
	return impl.LifecycleEvent{}, false
}

// QEMUPid is the pid of the QEMU process running a domain of this host.
func (h *Host) QEMUPid(name string) (int, error) {
	b, err := os.ReadFile(filepath.Join("/run/libvirt/qemu", h.DomainName(name)+".pid"))
	if err != nil {
		return 0, fmt.Errorf("domain %s is not running on %s: %w", name, h.HostID, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("bad pid file for %s: %q", name, b)
	}
	return pid, nil
}

// Crash kills the domain's QEMU with SIGKILL: libvirt reports STOPPED/FAILED.
func (h *Host) Crash(name string) error {
	if !h.active(name) {
		return fmt.Errorf("domain %s is not running on %s", name, h.HostID)
	}
	pid, err := h.QEMUPid(name)
	if err != nil {
		return err
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}

// GuestPoweroff asks the guest, over its serial port, to power itself off (busybox poweroff -f, an
// ACPI power off): libvirt reports SHUTDOWN/FINISHED, then STOPPED/SHUTDOWN once QEMU is reaped.
// It returns once the request is written, not once the domain is gone.
func (h *Host) GuestPoweroff(name string) error {
	if !h.active(name) {
		return fmt.Errorf("domain %s is not running on %s", name, h.HostID)
	}
	c, err := net.DialTimeout("unix", h.serialSock(name), 5*time.Second)
	if err != nil {
		return fmt.Errorf("serial port of %s: %w", name, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("\npoweroff\n")); err != nil {
		return err
	}
	// Hold the connection until the guest answers: QEMU feeds the UART only as fast as the guest
	// reads, and drops what is left when the client goes away.
	var got []byte
	buf := make([]byte, 512)
	want := []byte("csconform: poweroff " + cmdlineValue(name))
	for !bytes.Contains(got, want) {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			return fmt.Errorf("guest %s did not acknowledge poweroff: %w", name, err)
		}
	}
	return nil
}
