package logcheck

import (
	"bytes"
	"io"
	"testing"
)

// FuzzParse: no input makes the reader, the extractor or the checker panic; a reader error is an
// *InputError with a message. Seeds are under testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte("2025-03-01 10:00:00,123 DEBUG [c.c.v.VirtualMachinePowerStateSyncImpl] (AgentManager-Handler-1:[]) (logid:) Process VM state report. Host {\"id\":1}, number of records in report: 0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader("fuzz.log", bytes.NewReader(data))
		x := NewExtractor()
		c := NewChecker(Options{LinearChunk: 8})
		for {
			e, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if !IsInputError(err) || err.Error() == "" {
					t.Fatalf("error %T %v", err, err)
				}
				break
			}
			facts, _, bad := x.Extract(e, e.Thread)
			if bad == "" {
				c.Add(e, facts)
			}
		}
		c.Finish()
	})
}
