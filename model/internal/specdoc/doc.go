// Package specdoc reads the Markdown reference specification
// (shared/spec/cloudstack-behaviour.md) so that model tests can hold the Go
// tables against the spec text itself rather than against a second copy.
package specdoc
