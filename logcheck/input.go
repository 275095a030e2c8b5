package logcheck

import (
	"bufio"
	"compress/gzip"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Source is one input stream: a file (plain or gzip), or standard input.
type Source struct {
	Name   string // as given, for file:line
	Server string // which management server wrote it: its directory, or a host-name prefix
	r      *Reader
	closer io.Closer
	cur    *Entry
	idx    int
}

// Skip is a directory entry Expand left out, and why.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// IsServerLogName says whether a file name in a log directory is a management server's log: the
// live management-server.log and its rotations (management-server.log.2025-02-24.gz as CloudStack's
// log4j writes them, management-server.log.1, management-server.log-20250224.gz as logrotate may),
// and vmops.log, the name before 4.0. Jetty's access.log, apilog.log, management-server.out/.err and
// the rest are other layouts, or not logs at all.
func IsServerLogName(name string) bool {
	return strings.HasPrefix(name, "management-server.log") || strings.HasPrefix(name, "vmops.log")
}

// otherLogs are the other files of /var/log/cloudstack/management/ that share its layout or sit beside
// it and are not the server's log: the API's access log (apilog.log, log4j's layout, one line per API
// call), Jetty's access.log, and the JVM's stdout and stderr. Left out by name, before any sniffing.
var otherLogs = []string{"apilog.log", "access.log", "management-server.out", "management-server.err"}

func isOtherLogName(name string) bool {
	for _, o := range otherLogs {
		if strings.HasPrefix(name, o) {
			return true
		}
	}
	return false
}

// unreadable names a compressed rotation logcheck cannot unpack (it reads plain text and gzip).
func unreadable(name string) string {
	for _, ext := range []string{".bz2", ".xz", ".zst", ".lz4", ".zip", ".7z"} {
		if strings.HasSuffix(name, ext) {
			return ext
		}
	}
	return ""
}

// Expand turns the arguments into the files to read. A file is read as given. A directory gives its
// management-server logs (IsServerLogName: the live log and its rotations, gzipped ones included),
// sorted; every other entry is left out with the reason (skipped), so that
// /var/log/cloudstack/management/ can be given as it is.
func Expand(args []string) (files []string, skipped []Skip, err error) {
	for _, a := range args {
		if a == "-" {
			files = append(files, a)
			continue
		}
		st, err := os.Stat(a)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v", a, pathErr(err))
		}
		if !st.IsDir() {
			files = append(files, a)
			continue
		}
		ents, err := os.ReadDir(a)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v", a, pathErr(err))
		}
		n := 0
		for _, d := range ents {
			p := filepath.Join(a, d.Name())
			switch {
			case d.IsDir():
				skipped = append(skipped, Skip{p, "a directory (logcheck does not descend: give it as an argument of its own)"})
			case !d.Type().IsRegular():
				skipped = append(skipped, Skip{p, "not a regular file"})
			case unreadable(d.Name()) != "":
				skipped = append(skipped, Skip{p, "compressed as " + unreadable(d.Name()) + ", which logcheck does not unpack (gzip it, or unpack it and give the file)"})
			case IsServerLogName(d.Name()):
				files = append(files, p)
				n++
			case isOtherLogName(d.Name()):
				skipped = append(skipped, Skip{p, "not a management-server log (by its name: the API's, Jetty's or the JVM's)"})
			default:
				// another name (a copy saved as ms1.log, an excerpt from an issue): read by its
				// content, as a management server's log when its first entries are in its layout
				if why := sniff(p); why != "" {
					skipped = append(skipped, Skip{p, "not a management-server log: " + why})
					continue
				}
				files = append(files, p)
				n++
			}
		}
		if n == 0 {
			return nil, skipped, &NoLogError{Dir: a, Skipped: skipped}
		}
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("no input")
	}
	return files, skipped, nil
}

// NoLogError is a directory with no management-server log: what was in it, each with why it was
// left out, so that the user sees what logcheck looked at.
type NoLogError struct {
	Dir     string
	Skipped []Skip
}

func (e *NoLogError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: no management-server log in the directory (by name: management-server.log, management-server.log.2025-02-24.gz; by content: lines in its layout)", e.Dir)
	// one line, as every bad-input error: the first few entries left out, and how many more
	const shown = 4
	for i, sk := range e.Skipped {
		if i == shown {
			fmt.Fprintf(&b, "; and %d more", len(e.Skipped)-shown)
			break
		}
		fmt.Fprintf(&b, "; %s: %s", filepath.Base(sk.Path), sk.Reason)
	}
	if len(e.Skipped) == 0 {
		b.WriteString("; the directory is empty")
	}
	return b.String()
}

// sniffEntries is how many entries sniff reads before it decides.
const sniffEntries = 20

// sniff says why the file at p is not a management server's log by its content ("" when it is):
// among its first entries, one with a level and a logger, as log4j's layout writes them.
func sniff(p string) string {
	src, err := OpenSource(p, nil)
	if err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			return ie.Msg
		}
		return err.Error()
	}
	defer src.Close()
	for range sniffEntries {
		e, err := src.r.Next()
		if err != nil {
			var ie *InputError
			if errors.As(err, &ie) {
				return ie.Msg
			}
			break
		}
		if e.Level != "" && e.Logger != "" {
			return ""
		}
	}
	return fmt.Sprintf("none of its first %d entries is in the log's layout (a time, a level, a [logger])", sniffEntries)
}

func pathErr(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// OpenSource opens a file ("-": stdin), unpacking gzip by its magic number. An empty file is bad
// input: a log the operator meant to give us is not empty.
func OpenSource(name string, stdin io.Reader) (*Source, error) {
	var rc io.Reader
	var closer io.Closer
	if name == "-" {
		rc = stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, &InputError{File: name, Msg: pathErr(err)}
		}
		rc, closer = f, f
	}
	br := bufio.NewReaderSize(rc, 64<<10)
	head, err := br.Peek(2)
	if len(head) == 0 {
		if closer != nil {
			closer.Close()
		}
		if err != nil && err != io.EOF {
			return nil, &InputError{File: name, Msg: err.Error()}
		}
		return nil, &InputError{File: name, Msg: "empty file"}
	}
	var r io.Reader = br
	if len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			if closer != nil {
				closer.Close()
			}
			return nil, &InputError{File: name, Msg: "bad gzip data: " + err.Error()}
		}
		zr.Multistream(true)
		r = zr
	}
	server := "stdin"
	if name != "-" {
		server = filepath.Dir(name)
	}
	return &Source{Name: name, Server: server, r: NewReader(name, r), closer: closer}, nil
}

// Close closes the file.
func (s *Source) Close() {
	if s.closer != nil {
		s.closer.Close()
	}
}

// Stats is what the source's reader counted.
func (s *Source) Stats() Stats { return s.r.Stats }

// Merger merges several sources' entries by time (several servers' logs interleave only by time;
// rotated files of one server fall into order the same way). One pending entry per source.
type Merger struct {
	h       srcHeap
	all     []*Source
	started bool
}

// NewMerger merges srcs; ties keep the argument order.
func NewMerger(srcs []*Source) *Merger {
	for i, s := range srcs {
		s.idx = i
	}
	return &Merger{all: srcs}
}

// Next returns the earliest pending entry, io.EOF when all are done, or the first source's error.
func (m *Merger) Next() (*Entry, *Source, error) {
	if !m.started {
		m.started = true
		for _, s := range m.all {
			e, err := s.r.Next()
			if err == io.EOF {
				if s.r.Stats.Entries == 0 {
					return nil, nil, &InputError{File: s.Name, Msg: fmt.Sprintf("no log entries in %d line(s): not a management-server.log", s.r.Stats.Lines)}
				}
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			s.cur = e
			heap.Push(&m.h, s)
		}
	}
	if len(m.h) == 0 {
		return nil, nil, io.EOF
	}
	s := m.h[0]
	e := s.cur
	n, err := s.r.Next()
	switch {
	case err == io.EOF:
		heap.Pop(&m.h)
	case err != nil:
		return nil, nil, err
	default:
		s.cur = n
		heap.Fix(&m.h, 0)
	}
	return e, s, nil
}

// Totals sums the sources' counts.
func (m *Merger) Totals() Stats {
	var t Stats
	for _, s := range m.all {
		st := s.r.Stats
		t.Lines += st.Lines
		t.Bytes += st.Bytes
		t.Entries += st.Entries
		t.Orphans += st.Orphans
		t.Continued += st.Continued
		t.Unparsable += st.Unparsable
		t.Debug += st.Debug
	}
	return t
}

type srcHeap []*Source

func (h srcHeap) Len() int { return len(h) }
func (h srcHeap) Less(i, j int) bool {
	a, b := h[i].cur, h[j].cur
	if !a.Time.Equal(b.Time) {
		return a.Time.Before(b.Time)
	}
	return h[i].idx < h[j].idx
}
func (h srcHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *srcHeap) Push(x any)   { *h = append(*h, x.(*Source)) }
func (h *srcHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
