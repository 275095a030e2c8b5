package main

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/drivers/control"
)

// The slow-router-boot hook of an agent on real domains: POST /routerBoot sets the boot of routers
// started from then on; bad durations are refused and change nothing.
func TestAgentRouterBootHook(t *testing.T) {
	var got []time.Duration
	var out strings.Builder
	t.Setenv(control.EnvToken, testControlToken)
	if _, err := agentDialer("127.0.0.1:1", testAgentKey, "127.0.0.1:0", "", true, func(d time.Duration) { got = append(got, d) }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSpace(strings.TrimPrefix(out.String(), "agent fault hooks on "))
	for _, c := range []struct {
		d    string
		code int
	}{{"36s", 200}, {"0s", 200}, {"-1s", 400}, {"soon", 400}} {
		if code, body := hookPost(t, base+"/routerBoot?d="+c.d, testControlToken); code != c.code {
			t.Errorf("routerBoot?d=%s: status %d %s, want %d", c.d, code, body, c.code)
		}
	}
	if want := []time.Duration{36 * time.Second, 0}; !slices.Equal(got, want) {
		t.Errorf("router boots set %v, want %v", got, want)
	}
}
