package main

import (
	"fmt"
	"os"

	"github.com/csconform/csconform/conformance"
	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/harness"
)

func main() {
	sc, err := conformance.Find(os.Args[1])
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	seed := sc.Seed
	if len(os.Args) > 4 {
		fmt.Sscan(os.Args[4], &seed)
	}
	r, err := harness.RunScenario(sc, os.Args[2], nil, seed)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	r.WriteText(os.Stdout, sim.Epoch)
	if len(os.Args) > 3 && os.Args[3] == "x" {
		for _, e := range r.Cluster.Rec.Events {
			fmt.Printf("%s %-24s %-6s %-10s %s %s->%s %s\n", e.Time.Sub(sim.Epoch), e.Actor, e.Kind, e.Object, e.Level, e.From, e.To, e.Detail)
		}
	}
}
