package impl

import "testing"

// BenchmarkVMByName: the lookup power sync makes for every domain of every report, in a cloud of
// 2,000 VMs (issue 17: it was 70% of the CPU of a 100-host simulated day).
func BenchmarkVMByName(b *testing.B) {
	db := NewDB(newClock(), nil)
	for range 2000 {
		db.CreateVM("bench", "", "User", nil)
	}
	names := make([]string, 0, 2000)
	for _, v := range db.VMs(nil) {
		names = append(names, v.Name)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if db.VMByName(names[i%len(names)]) == nil {
			b.Fatalf("%s not found", names[i%len(names)])
		}
	}
}
