// Package specdoc reads the state machines' section of the reference specification
// (testdata/state-machines.md, carried by the repository) so that model tests can hold the Go
// tables against the spec's text rather than against a second copy written in Go.
package specdoc
