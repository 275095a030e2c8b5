// A module for mutation's tests: its binary is its own oracle, as csconform's is.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "oracle" {
		os.Exit(2)
	}
	if Free(4) != 4 {
		fmt.Println(`{"killedBy":"repro","detail":"Free(4) is not 4"}`)
		return
	}
	fmt.Println(`{"killedBy":""}`)
}
