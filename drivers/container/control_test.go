package container

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
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
	if err := getJSON(context.Background(), ts.URL+"/domains", "GET", &out); err != nil {
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
