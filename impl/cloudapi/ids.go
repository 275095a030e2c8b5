package cloudapi

import (
	"crypto/sha1"
	"fmt"
	"strconv"
	"sync"
)

// UUID is the stable UUID the API shows for one of the reference server's rows: kind is "vm",
// "network", "nic", "volume", "job", "host" (key: the host id) or a fixed object ("zone", ...). It is
// a name-based UUID (version 5 layout over SHA-1), so it is the same in every server incarnation and
// every process, and different kinds never share one.
func UUID(kind, key string) string {
	h := sha1.Sum([]byte("csconform/" + kind + "/" + key))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func idUUID(kind string, id int64) string { return UUID(kind, strconv.FormatInt(id, 10)) }

// idMap remembers the UUIDs it has shown; a miss is resolved by scanning the table (a UUID made by an
// earlier incarnation of the server).
type idMap struct {
	mu sync.Mutex
	m  map[string]string // uuid -> key
}

func (m *idMap) uuid(kind, key string) string {
	u := UUID(kind, key)
	m.mu.Lock()
	if m.m == nil {
		m.m = map[string]string{}
	}
	m.m[kind+"/"+u] = key
	m.mu.Unlock()
	return u
}

func (m *idMap) id(kind string, id int64) string { return m.uuid(kind, strconv.FormatInt(id, 10)) }

// lookup resolves a UUID of kind; keys lists the table's keys for a miss.
func (m *idMap) lookup(kind, u string, keys func() []string) (string, bool) {
	m.mu.Lock()
	k, ok := m.m[kind+"/"+u]
	m.mu.Unlock()
	if ok {
		return k, true
	}
	for _, k := range keys() {
		if m.uuid(kind, k) == u {
			return k, true
		}
	}
	return "", false
}
