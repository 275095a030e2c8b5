package impl

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/csconform/csconform/model/vm"
)

// atomicClock is an Env safe for concurrent writers: each look moves a millisecond.
type atomicClock struct{ n atomic.Int64 }

func (c *atomicClock) Now() time.Time {
	return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(c.n.Add(1)) * time.Millisecond)
}
func (c *atomicClock) Sleep(time.Duration) {}
func (c *atomicClock) Go(string, func())   {}
func (c *atomicClock) NewSignal() Signal   { return nil }

// benchDB is a state file the size the issue saw (about 1.2 MB: a few hundred VMs with their NICs,
// volumes, jobs and addresses), opened for writing; rewrite selects the old whole-file commit.
func benchDB(b *testing.B, rewrite bool) (*DB, []int64, float64) {
	b.Helper()
	mem := NewDB(&atomicClock{}, nil)
	var vms []int64
	for n := 0; n < 10; n++ {
		nw := mem.CreateNetwork("api", fmt.Sprintf("net%d", n), true, 200)
		for i := 0; i < 65; i++ {
			v := mem.CreateVM("api", "", "User", []int64{nw.ID})
			nic := mem.CreateNic(v.ID, nw.ID)
			mem.ReserveIP("ms1", nic.ID)
			mem.CreateVolume("api", v.ID)
			for k := 0; k < 4; k++ {
				mem.CreateJob("api", "VmWorkStart", "VirtualMachine", v.ID, "ms1")
			}
			vms = append(vms, v.ID)
		}
	}
	snap, err := mem.encodeFile(0)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "state.json")
	if err := os.WriteFile(path, snap, 0o600); err != nil {
		b.Fatal(err)
	}
	db, err := OpenDB(&atomicClock{}, nil, path)
	if err != nil {
		b.Fatal(err)
	}
	db.disk.rewrite = rewrite
	return db, vms, float64(len(snap)) / 1e6
}

// BenchmarkCommit: concurrent writers, each write one power-state change of its own VM (one row),
// on a database of 650 VMs (1.2 MB): commits per second and the 99th-percentile latency of a write (lock wait
// included), with the whole-file rewrite each commit used to do and with the commit log.
//
//	go test ./impl -run '^$' -bench BenchmarkCommit -benchtime 400x
func BenchmarkCommit(b *testing.B) {
	for _, mode := range []string{"rewrite", "log"} {
		for _, clients := range []int{1, 20, 200} {
			b.Run(fmt.Sprintf("%s/clients=%d", mode, clients), func(b *testing.B) {
				db, vms, mb := benchDB(b, mode == "rewrite")
				lat := make([]time.Duration, b.N)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for c := 0; c < clients; c++ {
					wg.Add(1)
					go func(c int) {
						defer wg.Done()
						ps := []vm.PowerState{vm.PowerOn, vm.PowerOff}
						for k := 0; ; k++ {
							i := next.Add(1) - 1
							if i >= int64(b.N) {
								return
							}
							t0 := time.Now()
							db.SetPowerState("ms1", vms[c%len(vms)], ps[k%2])
							lat[i] = time.Since(t0)
						}
					}(c)
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(mb, "MB-file")
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "commits/s")
				b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
			})
		}
	}
}
