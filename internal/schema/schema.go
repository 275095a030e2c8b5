// Package schema is the version and header every JSON document csconform prints or writes carries
// (repro --json, explore's result.json, check --json, logcheck --json and report.json), so that a
// reader can tell which commands' output it holds and refuse a version it does not know.
// docs/cli.md describes the documents.
package schema

// Version is the schema's version. 1: the first versioned one (2026-12); before it, repro --json
// printed a bare array of results and its violations' keys were capitalized ("Invariant").
const Version = 1

// Header opens every document.
type Header struct {
	SchemaVersion int    `json:"schemaVersion"`
	Command       string `json:"command"` // repro, explore, explore merge, check or logcheck
}

// New is the header of the command's document.
func New(command string) Header { return Header{SchemaVersion: Version, Command: command} }
