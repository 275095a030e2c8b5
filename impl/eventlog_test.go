package impl_test

import (
	"slices"
	"strings"

	"github.com/csconform/csconform/model/history"
)

// eventLog collects a run's history (the DB's and the agents' sink) for the tests to read.
type eventLog struct{ events []history.Event }

func (l *eventLog) Emit(e history.Event) { l.events = append(l.events, e) }

// has says whether an event of an actor whose name starts with actorPrefix has detail in its text.
func (l *eventLog) has(actorPrefix, detail string) bool {
	return slices.ContainsFunc(l.events, func(e history.Event) bool {
		return strings.HasPrefix(e.Actor, actorPrefix) && strings.Contains(e.Detail, detail)
	})
}

// count is how many events of an actor whose name starts with actorPrefix have detail in their text.
func (l *eventLog) count(actorPrefix, detail string) int {
	n := 0
	for _, e := range l.events {
		if strings.HasPrefix(e.Actor, actorPrefix) && strings.Contains(e.Detail, detail) {
			n++
		}
	}
	return n
}

// logged says whether a log line from the event at index from on starts with prefix.
func (l *eventLog) logged(from int, prefix string) bool {
	return slices.ContainsFunc(l.events[from:], func(e history.Event) bool {
		return e.Kind == history.Log && strings.HasPrefix(e.Detail, prefix)
	})
}
