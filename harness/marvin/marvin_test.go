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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// Issue 49: a scenario is a file a user is handed (a bug report's counterexample.yaml), and its
// strings reach Python source. A name with a newline ended the "# Scenario:" comment and put its
// next line at module level, run on import; a case name closed its string in an assertion's message.
// Every string is written as a Python literal or a one-line comment: importing the test (Marvin
// and nose stubbed) runs nothing of the scenario's, and no code of it is anywhere in the module.
func TestHostileStringsStayStrings(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "PWNED")
	code := `__import__("os").system("touch ` + marker + `")`
	for _, c := range []struct{ name, field string }{
		{"name", "name: \"x\\nimport os; " + strings.ReplaceAll(code, `"`, `\"`) + "\\n#\""},
		{"name carriage return", "name: \"x\\r" + strings.ReplaceAll(code, `"`, `\"`) + "\\r#\""},
		{"name line separator", "name: \"x\\u2028" + strings.ReplaceAll(code, `"`, `\"`) + "\\u2028\""},
		{"name null", "name: \"x\\0\""},
		{"name docstring", "name: \"x\\\"\\\"\\\" + " + strings.ReplaceAll(code, `"`, `\"`) + " + \\\"\\\"\\\"\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, err := harness.ParseScenario([]byte(c.field+`
title: t
hosts: [h1]
networks: [{name: n1}]
steps:
  - {op: deploy, vm: v, networks: [n1], host: h1, case: "c\", `+strings.ReplaceAll(code, `"`, `\"`)+`, \""}
`), "x")
			require.NoError(t, err)
			invariant := "ip-conflict\n" + code
			src := Test(sc, Finding{Title: "t", Invariants: []string{"nonesuch\n" + code, invariant},
				Expect: &harness.Expect{Cases: map[string]string{sc.Steps[0].Case: "passed", "r\"" + code + "\"": "retried"}}})
			importWithStubs(t, python, dir, src)
			_, err = os.Stat(marker)
			assert.True(t, os.IsNotExist(err), "importing the test ran the scenario's code:\n%s", src)
			// and nowhere, module level or in a method, is the scenario's code code
			out, err := exec.Command(python, "-c", `import ast, sys
tree = ast.parse(open(sys.argv[1], encoding="utf-8").read())
print(sum(isinstance(n, ast.Name) and n.id == "__import__" for n in ast.walk(tree)))`, filepath.Join(dir, "finding.py")).CombinedOutput()
			require.NoError(t, err, string(out))
			assert.Equal(t, "0", strings.TrimSpace(string(out)), "the scenario's strings are code in:\n%s", src)
		})
	}
}

// importWithStubs writes src as dir/finding.py and imports it with Marvin and nose stubbed.
func importWithStubs(t *testing.T, python, dir, src string) {
	t.Helper()
	stubs := map[string]string{
		"marvin/__init__.py":           "",
		"marvin/cloudstackTestCase.py": "class cloudstackTestCase(object):\n    pass\n",
		"marvin/lib/__init__.py":       "",
		"marvin/lib/base.py":           "Account = Configurations = Host = Network = NetworkOffering = ServiceOffering = SimulatorMock = VirtualMachine = Volume = None\n",
		"marvin/lib/common.py":         "get_domain = get_template = get_zone = None\n",
		"nose/__init__.py":             "",
		"nose/plugins/__init__.py":     "",
		"nose/plugins/attrib.py":       "def attr(*a, **k):\n    return lambda f: f\n",
	}
	for name, body := range stubs {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "finding.py"), []byte(src), 0o644))
	cmd := exec.Command(python, "-c", "import finding")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the test does not import:\n%s\n----\n%s", out, src)
}
