package cloudapi

import (
	"crypto/sha1"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
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

// idMap remembers the UUIDs it has shown. A miss (a UUID made by an earlier incarnation of the server,
// or one nobody made) catches up with the rows created since the last miss — hashing each row once
// over the server's life — and is then a map look-up: an unknown UUID never costs a pass over the
// table (it used to hash every row of it, under the mutex, at every request).
type idMap struct {
	mu sync.Mutex
	m  map[string]string // kind/uuid -> key
	// upTo: for a table keyed by id, every row up to this id is in m
	upTo map[string]int64
	// keyed: for a table keyed by name (hosts, never deleted), how many rows are in m
	keyed map[string]int
	// hashed counts the UUIDs misses computed (tests count the work a miss does)
	hashed atomic.Int64
}

func (m *idMap) uuid(kind, key string) string {
	u := UUID(kind, key)
	m.mu.Lock()
	m.put(kind, u, key)
	m.mu.Unlock()
	return u
}

// put records a UUID; the caller holds mu.
func (m *idMap) put(kind, u, key string) {
	if m.m == nil {
		m.m = map[string]string{}
	}
	m.m[kind+"/"+u] = key
}

func (m *idMap) get(kind, u string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.m[kind+"/"+u]
	return k, ok
}

func (m *idMap) id(kind string, id int64) string { return m.uuid(kind, strconv.FormatInt(id, 10)) }

// lookupID resolves a UUID of a table keyed by id; after lists the ids above the one it is given, in
// order: the rows a miss has not seen yet.
func (m *idMap) lookupID(kind, u string, after func(int64) []int64) (int64, bool) {
	if k, ok := m.get(kind, u); ok {
		id, err := strconv.ParseInt(k, 10, 64)
		return id, err == nil
	}
	m.mu.Lock()
	from := m.upTo[kind]
	m.mu.Unlock()
	// the database's lock is taken without mu, and the hashing done outside it
	ids := after(from)
	if len(ids) == 0 {
		return 0, false
	}
	us := make([]string, len(ids))
	for i, id := range ids {
		us[i] = idUUID(kind, id)
	}
	m.hashed.Add(int64(len(ids)))
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, id := range ids {
		m.put(kind, us[i], strconv.FormatInt(id, 10))
	}
	if m.upTo == nil {
		m.upTo = map[string]int64{}
	}
	m.upTo[kind] = max(m.upTo[kind], ids[len(ids)-1])
	k, ok := m.m[kind+"/"+u]
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(k, 10, 64)
	return id, err == nil
}

// lookupKey resolves a UUID of a table keyed by name whose rows are never deleted: count says how
// many rows it has, keys lists them (read only when count changed since the last miss).
func (m *idMap) lookupKey(kind, u string, count func() int, keys func() []string) (string, bool) {
	if k, ok := m.get(kind, u); ok {
		return k, true
	}
	m.mu.Lock()
	seen := m.keyed[kind]
	m.mu.Unlock()
	if count() == seen {
		return "", false
	}
	ks := keys()
	us := make([]string, len(ks))
	for i, k := range ks {
		us[i] = UUID(kind, k)
	}
	m.hashed.Add(int64(len(ks)))
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, k := range ks {
		m.put(kind, us[i], k)
	}
	if m.keyed == nil {
		m.keyed = map[string]int{}
	}
	m.keyed[kind] = len(ks)
	k, ok := m.m[kind+"/"+u]
	return k, ok
}
