package main

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// The slow-router-boot hook of an agent on real domains: POST /routerBoot sets the boot of routers
// started from then on; bad durations are refused and change nothing.
func TestAgentRouterBootHook(t *testing.T) {
	var got []time.Duration
	var out strings.Builder
	if _, err := agentDialer("127.0.0.1:1", "127.0.0.1:0", true, func(d time.Duration) { got = append(got, d) }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSpace(strings.TrimPrefix(out.String(), "agent fault hooks on "))
	for _, c := range []struct {
		d    string
		code int
	}{{"36s", 200}, {"0s", 200}, {"-1s", 400}, {"soon", 400}} {
		resp, err := http.Post(base+"/routerBoot?d="+c.d, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("routerBoot?d=%s: status %d, want %d", c.d, resp.StatusCode, c.code)
		}
	}
	if want := []time.Duration{36 * time.Second, 0}; !slices.Equal(got, want) {
		t.Errorf("router boots set %v, want %v", got, want)
	}
}
