package detect

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
)

// The planted bug is the catalogue's expunge-volume-failure-is-success (advanceExpunge marks a volume
// whose DeleteCommand failed Expunged): the row says Expunged while the file stays. The fix leaves
// such a row Destroy, as the Java does: apache/cloudstack@2a940403,
// engine/storage/volume/src/main/java/org/apache/cloudstack/storage/volume/VolumeServiceImpl.java,
// deleteVolumeCallback fires OperationSuccessed (Expunging → Expunged, row removed) only when the
// delete succeeded and OperationFailed otherwise, which Volume.State's machine takes back to Destroy
// (api/src/main/java/com/cloud/storage/Volume.java: Expunging, OperationFailed → Destroy).
func TestStorageLeaks(t *testing.T) {
	at := time.Unix(0, 0)
	st := Storage{Files: map[string]bool{"/pool/vol-1": true}, VMOf: func(string) string { return "3" }}
	vol := func(id, path string, states ...string) h {
		var out h
		from := ""
		for _, s := range states {
			out = out.with(history.Event{Kind: history.State, Object: "volume:" + id, From: from, To: s, Detail: path})
			from = s
		}
		return out
	}
	for _, c := range []struct {
		name   string
		events h
		want   int
	}{
		{"expunged over a failed delete (planted)", vol("1", "/pool/vol-1", "Allocated", "Ready", "Destroy", "Expunging", "Expunged"), 1},
		{"failed delete left Destroy (fixed)", vol("1", "/pool/vol-1", "Allocated", "Ready", "Destroy", "Expunging", "Destroy"), 0},
		{"expunged and deleted", vol("2", "/pool/vol-2", "Allocated", "Ready", "Destroy", "Expunging", "Expunged"), 0},
		{"ready volume with its file", vol("1", "/pool/vol-1", "Allocated", "Ready"), 0},
		{"expunging: its delete is ahead", vol("1", "/pool/vol-1", "Allocated", "Ready", "Destroy", "Expunging"), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs := StorageLeaks(slices.Values(c.events), st, at)
			assert.Len(t, vs, c.want)
			for _, v := range vs {
				assert.Equal(t, invariant.StorageLeak, v.Invariant)
				assert.Equal(t, "volume 1 (/pool/vol-1) of VM 3 is Expunged but its file is still on primary storage", v.Message)
			}
		})
	}
}
