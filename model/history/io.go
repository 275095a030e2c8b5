package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strings"
)

// The JSON-lines format: one Event per line, as Write writes them. Read takes it back, streaming,
// under two caps, so that a file of any size (or /dev/zero) costs at most the caps' worth of memory.
const (
	// DefaultMaxLine is the longest line Read accepts: an event is a few hundred bytes; a log line
	// with a stack trace a few kilobytes.
	DefaultMaxLine = 1 << 20
	// DefaultMaxTotal is how many bytes Read reads at most: a day of a busy simulated cluster is a
	// few hundred megabytes.
	DefaultMaxTotal int64 = 1 << 30
)

// Limits are Read's caps (0: the default).
type Limits struct {
	MaxLine  int
	MaxTotal int64
}

func (l Limits) line() int {
	if l.MaxLine <= 0 {
		return DefaultMaxLine
	}
	return l.MaxLine
}

func (l Limits) total() int64 {
	if l.MaxTotal <= 0 {
		return DefaultMaxTotal
	}
	return l.MaxTotal
}

// Write writes events as JSON lines.
func Write(w io.Writer, events []Event) error { return WriteSeq(w, slices.Values(events)) }

// WriteSeq writes the events a sequence yields as JSON lines.
func WriteSeq(w io.Writer, events iter.Seq[Event]) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for e := range events {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteFile writes events to path as JSON lines.
func WriteFile(path string, events []Event) error { return WriteFileSeq(path, slices.Values(events)) }

// WriteFileSeq writes the events a sequence yields to path as JSON lines.
func WriteFileSeq(path string, events iter.Seq[Event]) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteSeq(f, events); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadFile reads the history in path (see Read).
func ReadFile(path string, lim Limits) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path, lim)
}

// errTooBig is what capReader returns past the cap.
var errTooBig = errors.New("too big")

// capReader reads at most n bytes and then fails (over), where io.LimitReader would pretend the input
// ended.
type capReader struct {
	r    io.Reader
	n    int64
	over bool
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		// one byte more tells an input of exactly the cap from a longer one
		var b [1]byte
		if k, err := c.r.Read(b[:]); k > 0 {
			c.over = true
			return 0, errTooBig
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	k, err := c.r.Read(p)
	c.n -= int64(k)
	return k, err
}

// Read reads a history (JSON lines; blank lines are skipped) and checks it is one the checkers can
// trust: every line one Event with no unknown field, of a known kind, sequence numbers increasing,
// each return closing an open call, and the objects and values the checkers read well formed (see
// Validator). name (a file's path) and the line number lead every error. It streams: a line longer
// than lim's MaxLine or an input longer than its MaxTotal is an error, never a bigger buffer.
func Read(r io.Reader, name string, lim Limits) ([]Event, error) {
	maxLine, maxTotal := lim.line(), lim.total()
	cr := &capReader{r: r, n: maxTotal}
	sc := bufio.NewScanner(cr)
	// the line itself plus its newline (and a carriage return) must fit
	sc.Buffer(make([]byte, 0, min(64<<10, maxLine+2)), maxLine+2)
	var events []Event
	var v Validator
	n := 0
	for sc.Scan() {
		if cr.over {
			// the scanner hands over what it holds as a last line: it may be cut short
			break
		}
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if len(line) > maxLine {
			return nil, fmt.Errorf("%s:%d: line longer than the cap of %d bytes", name, n, maxLine)
		}
		e, err := decodeLine(line)
		if err == nil {
			err = v.Check(e)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: not a history event: %v", name, n, err)
		}
		events = append(events, e)
	}
	switch err := sc.Err(); {
	case cr.over:
		return nil, fmt.Errorf("%s: longer than the cap of %d bytes", name, maxTotal)
	case errors.Is(err, bufio.ErrTooLong):
		return nil, fmt.Errorf("%s:%d: line longer than the cap of %d bytes", name, n+1, maxLine)
	case err != nil:
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(events) == 0 {
		return nil, fmt.Errorf("%s: no events", name)
	}
	return events, nil
}

func decodeLine(line []byte) (Event, error) {
	var e Event
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return e, err
	}
	// one event a line: anything after it is a second value or garbage
	if _, err := dec.Token(); err != io.EOF {
		return e, errors.New("more than one JSON value on the line")
	}
	return e, nil
}

// Kinds are the event kinds, in the order of the constants.
var Kinds = []string{Call, Return, State, Power, IP, Lock, Log, Fault, Domain, Observe, Violation}

// VMObservations are the values of a VM observation's To: the domain on or off, the record live or
// dead (model/linear's ObserveVM writes them).
var VMObservations = []string{"on/live", "on/dead", "off/live", "off/dead"}

// Validator checks events one after another, as Read does; the zero value is ready.
type Validator struct {
	last  int64
	calls map[int]bool // op -> still open
}

// Check says why e cannot follow the events checked before it (nil if it can). It checks what the
// checkers rely on, so that a malformed history is refused instead of read as something it is not:
// a known kind, a sequence number above the previous one (it is the checkers' clock), one object (no
// comma) where the kind is about one, a call's op
// used once and a return closing an open call with "ok" or "failed", a lock "held" or "released", an
// address change on an "ip:" object, an observation of a "vm:" object (one of VMObservations) or an
// "ip:" object (the users, comma-separated, none empty).
func (v *Validator) Check(e Event) error {
	if !slices.Contains(Kinds, e.Kind) {
		if e.Kind == "" {
			return errors.New("no kind")
		}
		return fmt.Errorf("unknown kind %q", e.Kind)
	}
	if e.Seq <= 0 {
		return errors.New("no seq (sequence numbers start at 1)")
	}
	if e.Seq <= v.last {
		return fmt.Errorf("seq %d after seq %d: sequence numbers must increase", e.Seq, v.last)
	}
	// a fault names its targets comma-separated, and an address observation its users: a comma in
	// the one object an event of these kinds is about would make it two
	switch e.Kind {
	case Call, Return, State, Power, IP, Lock, Observe:
		if strings.Contains(e.Object, ",") {
			return fmt.Errorf("an event of kind %s is about one object, not %q", e.Kind, e.Object)
		}
	}
	switch e.Kind {
	case Call:
		if e.Op <= 0 {
			return errors.New("a call without an op number")
		}
		if _, seen := v.calls[e.Op]; seen {
			return fmt.Errorf("op %d called twice", e.Op)
		}
	case Return:
		if open, seen := v.calls[e.Op]; !seen || !open {
			return fmt.Errorf("a return of op %d, which is not an open call", e.Op)
		}
		if e.To != "ok" && e.To != "failed" {
			return fmt.Errorf("a return must be ok or failed, not %q", e.To)
		}
	case Lock:
		if e.Object == "" {
			return errors.New("a lock event names no lock")
		}
		if e.To != "held" && e.To != "released" {
			return fmt.Errorf("a lock is held or released, not %q", e.To)
		}
	case IP:
		if a, ok := strings.CutPrefix(e.Object, "ip:"); !ok || a == "" {
			return fmt.Errorf("an ip event is about an address (ip:A), not %q", e.Object)
		}
		if e.From == "" || e.To == "" {
			return errors.New("an ip event needs from and to (free or vm:N)")
		}
	case Observe:
		switch {
		case strings.HasPrefix(e.Object, "vm:") && len(e.Object) > 3:
			if !slices.Contains(VMObservations, e.To) {
				return fmt.Errorf("a VM observation is one of %s, not %q", strings.Join(VMObservations, ", "), e.To)
			}
		case strings.HasPrefix(e.Object, "ip:") && len(e.Object) > 3:
			if e.To != "" && slices.Contains(strings.Split(e.To, ","), "") {
				return fmt.Errorf("an address observation lists its users comma-separated, none empty, not %q", e.To)
			}
		default:
			return fmt.Errorf("an observation is of a VM (vm:N) or an address (ip:A), not %q", e.Object)
		}
	}
	v.last = e.Seq
	switch e.Kind {
	case Call:
		if v.calls == nil {
			v.calls = map[int]bool{}
		}
		v.calls[e.Op] = true
	case Return:
		v.calls[e.Op] = false
	}
	return nil
}

// LastSeq is the sequence number of the last event in the history file at path (0 if there is no
// such file, or it is empty), for a writer that appends to it: a restarted server numbering from 1
// again would make the file one Read refuses (its numbers going back). It reads the file's tail only
// (a line's cap).
func LastSeq(path string) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	off := max(0, st.Size()-DefaultMaxLine-2)
	tail := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(tail, off); err != nil && err != io.EOF {
		return 0, err
	}
	tail = bytes.TrimSpace(tail)
	if len(tail) == 0 {
		return 0, nil
	}
	// the last line that is an event: a writer killed mid-line leaves a cut one after it (which Read
	// then names)
	lines := bytes.Split(tail, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		var e Event
		if json.Unmarshal(lines[i], &e) == nil && e.Seq > 0 {
			return e.Seq, nil
		}
	}
	return 0, fmt.Errorf("%s: no history event in its last %d bytes, so its numbering cannot go on", path, len(tail))
}
