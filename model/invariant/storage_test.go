package invariant

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
	files := map[string]bool{"/pool/vol-1": true}
	cases := []struct {
		name string
		vol  Volume
		want int
	}{
		{"expunged over a failed delete (planted)", Volume{ID: "1", VMID: "3", Path: "/pool/vol-1", State: "Expunged", Removed: true}, 1},
		{"failed delete left Destroy (fixed)", Volume{ID: "1", VMID: "3", Path: "/pool/vol-1", State: "Destroy"}, 0},
		{"expunged and deleted", Volume{ID: "2", VMID: "3", Path: "/pool/vol-2", State: "Expunged", Removed: true}, 0},
		{"ready volume with its file", Volume{ID: "1", VMID: "3", Path: "/pool/vol-1", State: "Ready"}, 0},
		{"expunging: its delete is ahead", Volume{ID: "1", VMID: "3", Path: "/pool/vol-1", State: "Expunging"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs := CheckStorageLeaks([]Volume{c.vol}, files, at)
			assert.Len(t, vs, c.want)
			for _, v := range vs {
				assert.Equal(t, StorageLeak, v.Invariant)
				assert.Contains(t, v.Message, c.vol.Path)
			}
		})
	}
}
