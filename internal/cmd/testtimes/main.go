// Command testtimes reads `go test -json` on standard input, prints each package's result line and
// the output of every failed test as it goes, then the slowest tests and packages (ci/test.sh).
// It exits 1 when a test or package failed and 2 when the input was not a go test -json stream.
//
//	go test -json ./... | go run ./internal/cmd/testtimes [-n 10]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/csconform/csconform/internal/testtimes"
)

func main() {
	n := flag.Int("n", 10, "how many of the slowest tests and packages to print")
	flag.Parse()
	s, err := testtimes.Read(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		os.Exit(2)
	}
	if s.Lines == 0 {
		fmt.Fprintln(os.Stderr, "testtimes: no go test -json events on standard input")
		os.Exit(2)
	}
	testtimes.WriteSlowest(os.Stdout, s, *n)
	if s.Failed > 0 {
		os.Exit(1)
	}
}
