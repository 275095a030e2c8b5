package linear

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/csconform/csconform/model/history"
)

// The two-line histories that made csconform check panic (issue 16), as JSON lines.
const (
	// a lock on "networks1|b" held by c, then b|c writes network:1 holding "its" lock: the section
	// keys "network:1|b"+"|c" and "network:1"+"|b|c" were the same string, so the write looked up a
	// section in a partition that did not exist
	reproLockPipe = `{"seq":1,"actor":"c","kind":"lock","object":"networks1|b","to":"held"}
{"seq":2,"actor":"b|c","kind":"state","object":"network:1","to":"Allocated","lockHolder":"b|c"}
`
	// an address change on a VM object, then an observation of the VM: the partition vm:1 got the
	// IP model, which could not read the VM observation
	reproIPOnVM = `{"seq":1,"actor":"ms","kind":"ip","object":"vm:1","from":"free","to":"vm:1"}
{"seq":2,"actor":"observer","kind":"observe","object":"vm:1","to":"on/live"}
`
)

// maxFuzzEvents bounds a fuzzed history: enough for every kind of event on a few objects, few enough
// that porcupine answers (or times out) quickly.
const maxFuzzEvents = 32

// lenient decodes what it can of JSON lines, unvalidated: Partitions must take any events.
func lenient(data []byte) []history.Event {
	var out []history.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() && len(out) < maxFuzzEvents {
		var e history.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

func TestCheckWithoutModelIsUndecided(t *testing.T) {
	rs := Check([]Partition{{Object: "disk:1", Model: "disk", Ops: []porcupine.Operation{{}}}}, 0)
	if len(Undecided(rs)) != 1 {
		t.Fatalf("%+v", rs)
	}
}

func TestMalformedHistoriesAreCheckedWithoutPanic(t *testing.T) {
	cases := []struct {
		name  string
		input string
		want  map[string]string // object -> verdict on its partition
	}{
		// b|c did not hold network:1's lock: its write is one of its own, and the section on
		// network:1|b wrote nothing
		{"a lock on networks1|b and a write by b|c holding it", reproLockPipe, map[string]string{"network:1|b": "ok", "network:1": "ok"}},
		// the address change is no VM operation (left out); nothing started the VM seen running
		{"an address change on a VM, then its observation", reproIPOnVM, map[string]string{"vm:1": "illegal"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]string{}
			for _, r := range Check(Partitions(lenient([]byte(c.input))), time.Second) {
				if r.Model != modelOf(r.Object) {
					t.Errorf("%s checked with the %s model", r.Object, r.Model)
				}
				got[r.Object] = r.Verdict
			}
			if !maps.Equal(got, c.want) {
				t.Fatalf("verdicts %v, want %v", got, c.want)
			}
		})
	}
}

// compact reads bytes as events, five bytes each, over a small vocabulary of the names and values the
// partitioner reads (JSON would leave the fuzzer guessing field names).
func compact(data []byte) []history.Event {
	objects := []string{"vm:1", "vm:2", "network:1", "networks1", "networks1|b", "network:1|b", "ip:10.0.0.1", "vm:1,vm:2", "networks", ""}
	actors := []string{"c", "b|c", "w1", "gc", "observer", "fault"}
	values := []string{"", "ok", "failed", "held", "released", "on/live", "off/dead", "on/dead", "off/live", "free", "vm:1",
		"vm:1,vm:2", "Allocated", "Implementing", "crash", "guest-shutdown", "ms-restart"}
	calls := []string{"deploy x", "start x", "stop x", "destroy x", "forceStop x", "expunge x", "startNoRetry", ""}
	var out []history.Event
	seq := int64(0)
	for i := 0; i+5 <= len(data) && len(out) < maxFuzzEvents; i += 5 {
		b := data[i : i+5]
		e := history.Event{Kind: history.Kinds[int(b[0])%len(history.Kinds)], Op: int(b[0]) / len(history.Kinds) % 4,
			Object: objects[int(b[1])%len(objects)], Actor: actors[int(b[2]&0x7f)%len(actors)],
			From: values[int(b[3])%len(values)], To: values[int(b[4])%len(values)]}
		if e.Kind == history.Call {
			e.Detail = calls[int(b[3])%len(calls)]
		}
		if b[4]&0x80 != 0 {
			e.LockHolder = e.Actor
		}
		seq++
		if b[2]&0x80 != 0 { // out of order
			seq -= int64(b[1] % 4)
		}
		e.Seq = seq
		out = append(out, e)
	}
	return out
}

// FuzzPartitions feeds any events (JSON lines decoded leniently, or compact's, never validated) to the
// partitioner, the models and the explanations: none may panic, and every operation returns no
// earlier than it is called. (porcupine's Visualize, slow on these, is left to
// TestVisualizeFailingPartition.)
func FuzzPartitions(f *testing.F) {
	f.Add([]byte(reproLockPipe))
	f.Add([]byte(reproIPOnVM))
	for _, c := range modelCases() {
		var b bytes.Buffer
		if err := history.Write(&b, c.events); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	// compact: c calls deploy (op 1), it returns ok; w1 locks networks1 and writes; an observation
	f.Add([]byte{0 + 11, 0, 0, 0, 0, 1 + 11, 0, 0, 0, 1, 5, 3, 2, 0, 3, 2, 2, 2, 12, 0x80 | 13, 9, 0, 4, 0, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		events := compact(data)
		if bytes.HasPrefix(data, []byte("{")) {
			events = lenient(data)
		}
		parts := Partitions(events)
		for _, p := range parts {
			if Models[p.Model].Step == nil {
				t.Fatalf("%s: unknown model %q", p.Object, p.Model)
			}
			if modelOf(p.Object) != p.Model {
				t.Fatalf("%s has model %s", p.Object, p.Model)
			}
			for _, op := range p.Ops {
				if op.Return < op.Call {
					t.Fatalf("%s: an operation returns at %d before its call at %d", p.Object, op.Return, op.Call)
				}
			}
		}
		for _, r := range Check(parts, 5*time.Millisecond) {
			m := Models[r.Model]
			_ = m.DescribeState(m.Init())
			for _, op := range r.ops {
				_ = m.DescribeOperation(op.Input, op.Output)
			}
			if r.Verdict == "illegal" {
				if len(r.Explain) == 0 {
					t.Fatalf("%s: illegal with no explanation", r.Object)
				}
			}
		}
	})
}
