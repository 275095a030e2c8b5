package live

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/csconform/csconform/model/history"
)

// LogSink is a live process's history.Sink (csconform server, csconform agent): it prints events as
// log lines and, with a history file (--history), appends them as JSON lines.
type LogSink struct {
	mu      sync.Mutex
	w       io.Writer
	verbose bool
	hist    *json.Encoder
	seq     int64
}

// Emit numbers e (Seq) and stamps it (Time, when unset) before it writes it.
func (s *LogSink) Emit(e history.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	s.seq++
	e.Seq = s.seq
	if s.hist != nil {
		s.hist.Encode(e)
	}
	ts := e.Time.UTC().Format("2006-01-02T15:04:05.000Z")
	switch {
	case e.Kind == history.Log && (e.Level != "DEBUG" || s.verbose):
		fmt.Fprintf(s.w, "%s %-5s [%s] %s %s\n", ts, e.Level, e.Actor, e.Object, e.Detail)
	case e.Kind == history.State:
		fmt.Fprintf(s.w, "%s STATE [%s] %s %s -> %s (%s)\n", ts, e.Actor, e.Object, orDash(e.From), e.To, e.Detail)
	case e.Kind != history.Log && s.verbose:
		fmt.Fprintf(s.w, "%s %-5s [%s] %s %s -> %s %s\n", ts, e.Kind, e.Actor, e.Object, orDash(e.From), e.To, e.Detail)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// NewLogSink prints to w the INFO lines and up and every state change (verbose: every event), and
// appends every event to historyFile ("": none), its numbers going on from the file's last; the
// func closes the file.
func NewLogSink(w io.Writer, verbose bool, historyFile string) (*LogSink, func(), error) {
	s := &LogSink{w: w, verbose: verbose}
	if historyFile == "" {
		return s, func() {}, nil
	}
	// appending to a history (a restarted server): its numbers go on, as csconform check needs
	last, err := history.LastSeq(historyFile)
	if err != nil {
		return nil, nil, err
	}
	s.seq = last
	// its directory made as the state file's is (--state and --history side by side in a fresh
	// directory: the container world's server)
	if err := os.MkdirAll(filepath.Dir(historyFile), 0o755); err != nil {
		return nil, nil, err
	}
	// 0600, as the state and key files: a history holds every record's names and addresses
	f, err := os.OpenFile(historyFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, err
	}
	s.hist = json.NewEncoder(f)
	return s, func() { s.mu.Lock(); f.Close(); s.hist = nil; s.mu.Unlock() }, nil
}
