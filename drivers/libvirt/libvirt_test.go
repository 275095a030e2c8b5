package libvirt

// Guest tests: they boot real domains on libvirtd. Set up with ci/setup-libvirt.sh and
// ci/build-guest.sh, then: CSCONFORM_TIERS=libvirt go test ./drivers/libvirt/ (about a minute under TCG).
// They skip when libvirtd is unreachable or the guest is not built.

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/internal/tier"
)

var (
	testBase string // run directories of this test process
	testRuns sync.Map
)

func TestMain(m *testing.M) {
	if !tier.Enabled(tier.Libvirt) {
		os.Exit(m.Run()) // the guest tests skip; nothing of libvirtd's is touched
	}
	var err error
	testBase, err = os.MkdirTemp("", "csc-lvtest-")
	if err != nil {
		panic(err)
	}
	// Killed (CI's timeout, Ctrl-C), the process would die with its guests running: clean up what
	// its runs made first, then exit.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "%v: removing the domains of this process's runs\n", s)
		cleanupTestRuns()
		_ = os.RemoveAll(testBase)
		os.Exit(1)
	}()
	code := m.Run()
	signal.Stop(sigs)
	if !cleanupTestRuns() {
		code = 1
	}
	_ = os.RemoveAll(testBase)
	os.Exit(code)
}

// cleanupTestRuns removes whatever this process's runs left behind and reports whether none of
// their labelled domains remains.
func cleanupTestRuns() bool {
	ok := true
	if lv, err := connect(DefaultURI); err == nil {
		testRuns.Range(func(k, _ any) bool {
			if removed, err := Cleanup(DefaultURI, testBase, k.(string)); err != nil {
				fmt.Fprintf(os.Stderr, "cleanup of run %s: %v\n", k, err)
				ok = false
			} else if len(removed) > 0 {
				fmt.Fprintf(os.Stderr, "TestMain cleaned up after run %s: %v\n", k, removed)
			}
			return true
		})
		if ls, err := Labelled(lv); err == nil {
			for _, l := range ls {
				if _, mine := testRuns.Load(l.Label.Run); mine {
					fmt.Fprintf(os.Stderr, "domain %s left behind\n", l.Domain.Name)
					ok = false
				}
			}
		}
		_ = lv.Disconnect()
	}
	return ok
}

// needLibvirt skips unless libvirtd answers and the guest is built.
func needLibvirt(t *testing.T) {
	t.Helper()
	g := DefaultGuestDir()
	for _, f := range []string{"vmlinuz", "initramfs.cpio.gz"} {
		if !fileExists(filepath.Join(g, f)) {
			t.Skipf("guest not built (%s missing): run ci/build-guest.sh", filepath.Join(g, f))
		}
	}
	lv, err := connect(DefaultURI)
	if err != nil {
		t.Skipf("libvirtd unreachable: %v", err)
	}
	_ = lv.Disconnect()
}

func newRun(t *testing.T) string {
	run := fmt.Sprintf("t%d%s", os.Getpid()%100000, strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))[:4])
	testRuns.Store(run, true)
	return run
}

func shortDelays(spec impl.DomainSpec) time.Duration {
	if spec.Type == "DomainRouter" {
		return 3 * time.Second
	}
	return 0
}

func newHost(t *testing.T, run, id string, opts Options) *Host {
	t.Helper()
	opts.Run, opts.BaseDir = run, testBase
	if opts.BootDelay == nil {
		opts.BootDelay = shortDelays
	}
	h, err := New(DefaultURI, id, opts)
	if err != nil {
		t.Fatalf("New(%s): %v", id, err)
	}
	t.Logf("host %s: virt type %s (%s)", id, h.VirtType(), VirtTypeReason())
	t.Cleanup(func() {
		if removed, err := Cleanup(DefaultURI, testBase, run); err != nil {
			t.Errorf("cleanup: %v (removed %v)", err, removed)
		}
		_ = h.Close()
	})
	return h
}

// recorder collects a host's lifecycle events with their arrival times.
type recorder struct {
	mu  sync.Mutex
	evs []timedEvent
}

type timedEvent struct {
	impl.LifecycleEvent
	at time.Time
}

func record(h *Host) *recorder {
	r := &recorder{}
	h.Subscribe(func(ev impl.LifecycleEvent) {
		r.mu.Lock()
		r.evs = append(r.evs, timedEvent{ev, time.Now()})
		r.mu.Unlock()
	})
	return r
}

// wait returns when the domain's event with that event (and detail, if not "") arrived.
func (r *recorder) wait(t *testing.T, dom, event, detail string, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, e := range r.evs {
			if e.Domain == dom && e.Event == event && (detail == "" || e.Detail == detail) {
				r.mu.Unlock()
				return e.at
			}
		}
		r.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s/%s event for %s within %s; got %v", event, detail, dom, timeout, r.all())
	return time.Time{}
}

func (r *recorder) all() []impl.LifecycleEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []impl.LifecycleEvent
	for _, e := range r.evs {
		out = append(out, e.LifecycleEvent)
	}
	return out
}

func TestBootReadyAndHostsSharingLibvirtd(t *testing.T) {
	tier.Need(t, tier.Libvirt)
	needLibvirt(t)
	run := newRun(t)
	h1 := newHost(t, run, "h1", Options{})
	h2 := newHost(t, run, "h2", Options{})
	ev1, ev2 := record(h1), record(h2)

	user := impl.DomainSpec{Name: "i-2-7-VM", Type: "User", MemoryMiB: 128, IPs: []string{"10.1.1.7"}, MACs: []string{"02:00:0a:01:01:07"}}
	router := impl.DomainSpec{Name: "r-4-VM", Type: "DomainRouter", MemoryMiB: 128, IPs: []string{"10.1.1.1"}}
	t0 := time.Now()
	if err := h1.Start(user); err != nil {
		t.Fatal(err)
	}
	t.Logf("h1 Start returned in %s", time.Since(t0).Round(time.Millisecond))
	t1 := time.Now()
	if err := h2.Start(router); err != nil {
		t.Fatal(err)
	}
	if err := h1.Start(user); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second Start of a running domain: %v", err)
	}
	ev1.wait(t, user.Name, "STARTED", "BOOTED", 10*time.Second)
	ev2.wait(t, router.Name, "STARTED", "BOOTED", 10*time.Second)

	if got := h1.Running(); !slices.Equal(got, []string{user.Name}) {
		t.Fatalf("h1.Running() = %v", got)
	}
	if got := h2.Running(); !slices.Equal(got, []string{router.Name}) {
		t.Fatalf("h2.Running() = %v", got)
	}
	// The router says ready only after its boot delay (3 s here) on top of the kernel's boot.
	if err := h2.WaitReady(router.Name, time.Second); err == nil {
		t.Fatal("router ready within 1 s of start despite a 3 s boot delay")
	}
	if err := h1.WaitReady(user.Name, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("user guest: start to ready %s (two guests booting at once)", time.Since(t0).Round(time.Millisecond))
	if err := h2.WaitReady(router.Name, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("router (3 s delay): start to ready %s", time.Since(t1).Round(time.Millisecond))
	log, _ := os.ReadFile(h1.SerialLog(user.Name))
	if !strings.Contains(string(log), "csconform: ready i-2-7-VM ip=10.1.1.7 mac=02:00:0a:01:01:07") {
		t.Fatalf("serial log lacks the ready line with ip and mac:\n%s", log)
	}
	// Neither host sees the other's events nor touches its domains.
	for _, e := range ev1.all() {
		if e.Domain != user.Name {
			t.Fatalf("h1 got an event of another host's domain: %+v", e)
		}
	}
	if err := h2.Stop(user.Name); err != nil { // not h2's: nothing happens
		t.Fatal(err)
	}
	if got := h1.Running(); !slices.Equal(got, []string{user.Name}) {
		t.Fatalf("h2.Stop touched h1's domain: h1.Running() = %v", got)
	}

	t2 := time.Now()
	if err := h1.Stop(user.Name); err != nil {
		t.Fatal(err)
	}
	t.Logf("Stop returned in %s", time.Since(t2).Round(time.Millisecond))
	at := ev1.wait(t, user.Name, "STOPPED", "DESTROYED", 10*time.Second)
	t.Logf("STOPPED/DESTROYED event %s after Stop began", at.Sub(t2).Round(time.Millisecond))
	if got := h1.Running(); len(got) != 0 {
		t.Fatalf("h1.Running() after Stop = %v", got)
	}
	if got := h2.Running(); !slices.Equal(got, []string{router.Name}) {
		t.Fatalf("h2.Running() after h1's Stop = %v", got)
	}
	if err := h1.Stop(user.Name); err != nil {
		t.Fatalf("Stop of a missing domain: %v", err)
	}
	if err := h1.Stop("never-was"); err != nil {
		t.Fatalf("Stop of a missing domain: %v", err)
	}
	if err := h1.WaitReady(user.Name, time.Second); err == nil {
		t.Fatal("WaitReady of a stopped domain succeeded")
	}
	if err := h2.Stop(router.Name); err != nil {
		t.Fatal(err)
	}
}

func TestCrashAndGuestPoweroff(t *testing.T) {
	tier.Need(t, tier.Libvirt)
	needLibvirt(t)
	run := newRun(t)
	h := newHost(t, run, "h1", Options{Lifetime: func(s impl.DomainSpec) time.Duration {
		if s.Name == "i-3-VM" {
			return time.Second
		}
		return 0
	}})
	ev := record(h)
	crash := impl.DomainSpec{Name: "i-1-VM", Type: "User"}
	off := impl.DomainSpec{Name: "i-2-VM", Type: "User"}
	life := impl.DomainSpec{Name: "i-3-VM", Type: "User"}
	for _, s := range []impl.DomainSpec{crash, off, life} {
		if err := h.Start(s); err != nil {
			t.Fatal(err)
		}
	}
	// kill -9 of QEMU: STOPPED/FAILED.
	t0 := time.Now()
	if err := h.Crash(crash.Name); err != nil {
		t.Fatal(err)
	}
	at := ev.wait(t, crash.Name, "STOPPED", "FAILED", 15*time.Second)
	t.Logf("kill -9 -> STOPPED/FAILED in %s", at.Sub(t0).Round(time.Millisecond))
	if err := h.WaitReady(crash.Name, 5*time.Second); err == nil {
		t.Fatal("crashed domain became ready")
	}

	// The guest powers itself off on request: SHUTDOWN, then STOPPED/SHUTDOWN.
	if err := h.WaitReady(off.Name, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	if err := h.GuestPoweroff(off.Name); err != nil {
		t.Fatal(err)
	}
	sh := ev.wait(t, off.Name, "SHUTDOWN", "", 20*time.Second)
	st := ev.wait(t, off.Name, "STOPPED", "SHUTDOWN", 20*time.Second)
	if st.Before(sh) {
		t.Fatalf("STOPPED before SHUTDOWN: %v", ev.all())
	}
	t.Logf("guest poweroff -> SHUTDOWN in %s, STOPPED/SHUTDOWN in %s", sh.Sub(t1).Round(time.Millisecond), st.Sub(t1).Round(time.Millisecond))

	// The guest whose lifetime ends powers itself off the same way.
	ev.wait(t, life.Name, "SHUTDOWN", "", 90*time.Second)
	ev.wait(t, life.Name, "STOPPED", "SHUTDOWN", 20*time.Second)

	deadline := time.Now().Add(10 * time.Second)
	for len(h.Running()) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if got := h.Running(); len(got) != 0 {
		t.Fatalf("Running() = %v after crash and poweroffs", got)
	}
	if err := h.Stop(crash.Name); err != nil {
		t.Fatalf("Stop of a crashed domain: %v", err)
	}
}

func TestDeleteVolumeWhileHeldOpen(t *testing.T) {
	tier.Need(t, tier.Libvirt)
	needLibvirt(t)
	run := newRun(t)
	h1 := newHost(t, run, "h1", Options{})
	h2 := newHost(t, run, "h2", Options{})
	vol := "/primary/ROOT-5-9.qcow2"
	spec := impl.DomainSpec{Name: "i-5-VM", Type: "User", Disks: []string{vol}}
	if err := h1.Start(spec); err != nil {
		t.Fatal(err)
	}
	f, _ := h1.VolumeFile(vol)
	if !fileExists(f) {
		t.Fatalf("volume file %s not created", f)
	}
	pid, err := h1.QEMUPid(spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if pids := pidsHolding(f); !slices.Contains(pids, pid) {
		t.Fatalf("QEMU pid %d does not hold %s open (holders %v)", pid, f, pids)
	}
	// Storage is shared: the delete may come through another host; it still fails.
	for _, h := range []*Host{h1, h2} {
		if err := h.DeleteVolume(vol); err == nil || !strings.Contains(err.Error(), "in use") {
			t.Fatalf("DeleteVolume via %s while running: %v", h.HostID, err)
		}
	}
	if !fileExists(f) {
		t.Fatal("volume file gone after a failed delete")
	}
	if err := h1.Stop(spec.Name); err != nil {
		t.Fatal(err)
	}
	if err := h2.DeleteVolume(vol); err != nil {
		t.Fatalf("DeleteVolume after Stop: %v", err)
	}
	if fileExists(f) {
		t.Fatal("volume file still there after delete")
	}
	if err := h1.Start(spec); err == nil {
		_ = h1.Stop(spec.Name)
		t.Fatal("Start with a deleted volume succeeded")
	}
}

func TestCleanupRemovesLabelledOnly(t *testing.T) {
	tier.Need(t, tier.Libvirt)
	needLibvirt(t)
	run := newRun(t)
	other := run + "o"
	testRuns.Store(other, true)
	h := newHost(t, run, "h1", Options{})
	ho := newHost(t, other, "h1", Options{})
	if err := h.Start(impl.DomainSpec{Name: "i-1-VM", Type: "User", Disks: []string{"/primary/ROOT-1-1.qcow2"}}); err != nil {
		t.Fatal(err)
	}
	if err := ho.Start(impl.DomainSpec{Name: "i-1-VM", Type: "User"}); err != nil {
		t.Fatal(err)
	}
	// A domain named like ours but without the label, and a directory without the label file.
	foreign := "csc-" + run + "-h1-foreign"
	lv, err := connect(DefaultURI)
	if err != nil {
		t.Fatal(err)
	}
	defer lv.Disconnect()
	x := domainXML{Name: foreign, VirtType: h.VirtType(), MemoryMiB: MinMemoryMiB,
		Kernel: filepath.Join(DefaultGuestDir(), "vmlinuz"), Initrd: filepath.Join(DefaultGuestDir(), "initramfs.cpio.gz"),
		Cmdline: "console=ttyS0 quiet", SerialSock: filepath.Join(testBase, "foreign.sock"), SerialLog: filepath.Join(testBase, "foreign.log")}
	xs := x.String()
	if strings.Contains(xs, "<metadata>") {
		t.Fatalf("foreign domain labelled:\n%s", xs)
	}
	fd, err := lv.DomainCreateXML(xs, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lv.DomainDestroy(fd) }()
	foreignDir := filepath.Join(testBase, "not-ours")
	if err := os.MkdirAll(foreignDir, 0o755); err != nil {
		t.Fatal(err)
	}

	removed, err := Cleanup(DefaultURI, testBase, run)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Cleanup(%s) removed %v", run, removed)
	if !slices.Contains(removed, "domain "+h.DomainName("i-1-VM")) || !slices.Contains(removed, "dir "+h.RunDir()) {
		t.Fatalf("Cleanup did not report the run's domain and directory: %v", removed)
	}
	if got := h.Running(); len(got) != 0 {
		t.Fatalf("run %s still has %v", run, got)
	}
	if fileExists(h.RunDir()) {
		t.Fatalf("run dir %s still there", h.RunDir())
	}
	if got := ho.Running(); !slices.Equal(got, []string{"i-1-VM"}) {
		t.Fatalf("other run's domains after cleanup: %v", got)
	}
	if a, err := lv.DomainIsActive(fd); err != nil || a != 1 {
		t.Fatalf("unlabelled domain %s touched by cleanup: active=%d err=%v", foreign, a, err)
	}
	if !fileExists(foreignDir) || !fileExists(ho.RunDir()) {
		t.Fatal("cleanup removed a directory it does not own")
	}
	if err := lv.DomainDestroy(fd); err != nil {
		t.Fatal(err)
	}
	// The other run, cleaned without a run filter restricted to our base directory.
	removed, err = Cleanup(DefaultURI, testBase, other)
	if err != nil || !slices.Contains(removed, "domain "+ho.DomainName("i-1-VM")) {
		t.Fatalf("Cleanup(%s) = %v, %v", other, removed, err)
	}
	for i := 0; i < 300; i++ {
		if _, err := lv.DomainLookupByName(foreign); golibvirt.IsNotFound(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("unlabelled domain %s still there after destroy", foreign)
}
