package control

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// The agent's fault hooks answer only with the token, refuse bad durations without acting on them,
// and serve /routerBoot only when the agent has a router boot to set.
func TestAgentHooks(t *testing.T) {
	const token = "the-agent-hooks-test-token"
	var delays, boots []time.Duration
	ts := httptest.NewServer(AgentHooks(token, func(d time.Duration) { delays = append(delays, d) }, func(d time.Duration) { boots = append(boots, d) }))
	defer ts.Close()
	ctx := context.Background()
	var api *APIError
	if err := Do(ctx, ts.URL+"/delayNextOutOfBand?d=1s", "POST", "", nil); !errors.As(err, &api) {
		t.Fatalf("no token: %v", err)
	}
	for _, c := range []struct {
		path string
		ok   bool
	}{{"/delayNextOutOfBand?d=1500ms", true}, {"/delayNextOutOfBand?d=soon", false}, {"/routerBoot?d=36s", true}, {"/routerBoot?d=-1s", false}, {"/routerBoot?d=0s", true}} {
		if err := Do(ctx, ts.URL+c.path, "POST", token, nil); (err == nil) != c.ok {
			t.Errorf("%s: %v", c.path, err)
		}
	}
	if !slices.Equal(delays, []time.Duration{1500 * time.Millisecond}) || !slices.Equal(boots, []time.Duration{36 * time.Second, 0}) {
		t.Fatalf("delays %v, router boots %v", delays, boots)
	}
	none := httptest.NewServer(AgentHooks(token, func(time.Duration) {}, nil))
	defer none.Close()
	if err := Do(ctx, none.URL+"/routerBoot?d=1s", "POST", token, nil); err == nil {
		t.Fatal("/routerBoot served without a router boot to set")
	}
}

// A hypervisor's truth (GET /domains) is open to anyone; everything else needs the token.
func TestTruthOpen(t *testing.T) {
	const token = "the-truth-open-test-token"
	h := TruthOpen(token, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { WriteJSON(w, http.StatusOK, []string{}) }))
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx := context.Background()
	if err := Do(ctx, ts.URL+"/domains", "GET", "", nil); err != nil {
		t.Fatalf("the truth without a token: %v", err)
	}
	if err := Do(ctx, ts.URL+"/crash?name=x", "POST", "", nil); err == nil {
		t.Fatal("a hook without the token was served")
	}
	if err := Do(ctx, ts.URL+"/crash?name=x", "POST", token, nil); err != nil {
		t.Fatalf("a hook with the token: %v", err)
	}
}
