package container

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/csconform/csconform/drivers/control"
)

// Control sends the run's token as "Authorization: Bearer TOKEN" (what csconform server's control
// endpoint requires); the truth and fault endpoints get no token.
func TestControlSendsTheToken(t *testing.T) {
	var got []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		w.Write([]byte("[]"))
	}))
	defer ts.Close()
	c := &Cluster{control: ts.URL, token: newToken()}
	if len(c.token) < 32 {
		t.Fatalf("token %d characters", len(c.token))
	}
	var out []any
	if err := c.Control(context.Background(), "listHosts", nil, &out); err != nil {
		t.Fatal(err)
	}
	if err := control.Do(context.Background(), ts.URL+"/domains", "GET", "", &out); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "Bearer "+c.token || got[1] != "" {
		t.Fatalf("Authorization headers sent: %d, control with the token %v, truth without %v", len(got), got[0] == "Bearer "+c.token, got[1] == "")
	}
	if newToken() == c.token {
		t.Fatal("two runs got the same token")
	}
}

// Every published port of a run is bound to the host's loopback, never to 0.0.0.0 or ::.
func TestPortsPublishedOnLoopback(t *testing.T) {
	b, err := portBindings([]string{controlPort, truthPort})
	if err != nil || len(b) != 2 {
		t.Fatalf("%v %v", b, err)
	}
	for p, bs := range b {
		if len(bs) != 1 || !bs[0].HostIP.IsLoopback() || bs[0].HostIP.String() != "127.0.0.1" {
			t.Fatalf("%s published on %v", p, bs)
		}
	}
	if _, err := portBindings([]string{"nope/tcp"}); err == nil {
		t.Fatal("a bad port was accepted")
	}
}

// The image's binary is the running csconform when it is static (go install with CGO_ENABLED=0):
// isStatic tells a static executable from one that needs the dynamic loader.
func TestIsStatic(t *testing.T) {
	dir := t.TempDir()
	build := func(name string, cgo string) string {
		out := filepath.Join(dir, name)
		src := filepath.Join(dir, name+".go")
		os.WriteFile(src, []byte("package main\nimport \"os/user\"\nfunc main() { user.Current() }\n"), 0o644)
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", out, src)
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo, "GOFLAGS=")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("cannot build a test binary (CGO_ENABLED=%s): %v\n%s", cgo, err, b)
		}
		return out
	}
	static, err := isStatic(build("static", "0"))
	if err != nil || !static {
		t.Fatalf("a CGO_ENABLED=0 binary: static %v, %v", static, err)
	}
	if _, err := exec.LookPath("gcc"); err == nil {
		if dyn, err := isStatic(build("dynamic", "1")); err != nil || dyn {
			t.Fatalf("a cgo binary: static %v, %v", dyn, err)
		}
	}
	if _, err := isStatic(filepath.Join(dir, "static.go")); err == nil || !strings.Contains(err.Error(), "not an ELF executable") {
		t.Fatalf("a source file: %v", err)
	}
}

// Build directories are found by run id, and a --run that is not an id never reaches the file
// system as a pattern.
func TestBuildDirs(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	d := filepath.Join(os.TempDir(), "csc-image-r1-123")
	os.Mkdir(d, 0o700)
	if got := buildDirs("r1"); len(got) != 1 || got[0] != d {
		t.Fatalf("buildDirs(r1) = %v", got)
	}
	if got := buildDirs(""); len(got) != 1 {
		t.Fatalf("buildDirs(\"\") = %v", got)
	}
	for _, bad := range []string{"../x", "*", "a/b", "r[1]"} {
		if got := buildDirs(bad); got != nil {
			t.Fatalf("buildDirs(%q) = %v", bad, got)
		}
	}
}
