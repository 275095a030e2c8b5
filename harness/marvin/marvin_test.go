package marvin

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/conformance"
	"github.com/csconform/csconform/harness"
)

// Compiles checks Python source with python3 -m py_compile, skipping (with why) where python3 is
// absent; Marvin itself is not run.
func Compiles(t *testing.T, name, src string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the generated Marvin tests are not compiled here (CI's Debian image has it)")
	}
	file := filepath.Join(t.TempDir(), name+".py")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(py, "-m", "py_compile", file).CombinedOutput(); err != nil {
		t.Fatalf("%s does not compile: %v\n%s\n----\n%s", name, err, out, src)
	}
}

// Every built-in scenario, as a finding of its cloudstack-4.22 violations with its fixed outcome
// asserted, is a Marvin test that compiles; its faults are mocks or skips with the reason.
func TestEveryScenarioCompiles(t *testing.T) {
	all, err := conformance.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range all {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel() // python3 starts once a scenario
			f := Finding{Title: sc.Title, Origin: "csconform repro " + sc.Name}
			if e, ok := sc.Expect["cloudstack-4.22"]; ok {
				f.Invariants = e.Violations
			}
			if e, ok := sc.Expect["fixed"]; ok {
				f.Expect = &e
			}
			src := Test(sc, f)
			for _, st := range sc.Steps {
				if st.Fault == "host-unreachable" {
					// the bridge's mocks, the lost commands' wait the step's duration
					wait := fmt.Sprintf(`"wait:%d|result:fail"`, cmp.Or(st.Duration, 5*time.Minute).Milliseconds())
					for _, want := range []string{`("PingCommand", "result:fail")`, `("CheckHealthCommand", "result:fail")`,
						`("StartCommand", ` + wait + `)`, `("StopCommand", ` + wait + `)`, `("DeleteCommand", ` + wait + `)`} {
						if !strings.Contains(src, want) {
							t.Errorf("host-unreachable has no mock %s", want)
						}
					}
				}
				if st.Fault == "agent-restart" && !strings.Contains(src, "fault agent-restart cannot go through the simulator") {
					t.Errorf("agent-restart is not skipped with its reason")
				}
			}
			Compiles(t, strings.ReplaceAll(sc.Name, "-", "_"), src)
		})
	}
}

// A scenario with every step kind and awkward strings still compiles.
func TestAwkwardStrings(t *testing.T) {
	sc, err := harness.ParseScenario([]byte(`name: odd
title: "quotes \" and \\ and\nnewlines, 'single' too, % signs"
hosts: [h1, h2]
config: {vm.destroy.forcestop: "true"}
networks: [{name: "n\"1", persistent: true}]
steps:
  - {op: deploy, vm: "a'b", networks: ["n\"1"], host: h1, async: true}
  - {until: start-sent, vm: "a'b", fault: slow-router-boot, duration: 40s}
  - {until: log, line: "it's \"done\"", vm: "a'b", op: stop}
  - {op: setConfig, key: ping.interval, value: "5"}
  - {fault: host-unreachable, host: h2, duration: 1m, async: true}
  - {until: host-up, host: h2, op: forceStop, vm: "a'b"}
  - {op: createNetwork, network: n2}
  - {op: allocate, vm: c, networks: [n2]}
  - {op: startNoRetry, vm: c}
  - {op: expunge, vm: c}
settle: 30s
`), "odd")
	if err != nil {
		t.Fatal(err)
	}
	Compiles(t, "odd", Test(sc, Finding{Title: "100% odd \"title\"\n", Invariants: []string{"ip-conflict", "network-lock", "nonesuch"}}))
}
