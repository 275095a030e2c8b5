package impl

import (
	"strings"
	"testing"
	"time"
)

func TestConfigDefaultsAndOverrides(t *testing.T) {
	c, err := NewConfig(map[string]string{"ping.interval": "10", "vm.destroy.forcestop": "true"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		got  any
		want any
	}{
		{"ping.interval", c.PingInterval(), 10 * time.Second},
		{"ping timeout = interval × 2.5", c.PingTimeout(), 25 * time.Second},
		{"job.expire.minutes", c.Int("job.expire.minutes"), 1440},
		{"network.gc.wait", c.Seconds("network.gc.wait"), 600 * time.Second},
		{"vm.job.check.interval", c.Millis("vm.job.check.interval"), 3 * time.Second},
		{"vm.destroy.forcestop", c.Bool("vm.destroy.forcestop"), true},
	}
	for _, x := range cases {
		if x.got != x.want {
			t.Errorf("%s = %v, want %v", x.name, x.got, x.want)
		}
	}
}

func TestConfigRejectsBadInput(t *testing.T) {
	for _, o := range []map[string]string{{"no.such.key": "1"}, {"ping.interval": "soon"}, {"vm.destroy.forcestop": "maybe"}} {
		if _, err := NewConfig(o); err == nil {
			t.Errorf("%v accepted", o)
		}
	}
}

func TestProfilesAndDefects(t *testing.T) {
	cases := []struct {
		in   string
		want string
		err  bool
	}{
		{"D1", "D1", false},
		{"D2", "D2a,D2b,D2c,D2d,D2e", false},
		{"d3, D2b", "D2b,D3", false},
		{"none", "", false},
		{"D7", "", true},
	}
	for _, c := range cases {
		s, err := ParseDefects(c.in)
		if (err != nil) != c.err {
			t.Fatalf("%q: err = %v", c.in, err)
		}
		if err == nil && strings.Join(s.On(), ",") != c.want {
			t.Errorf("%q: on = %v, want %s", c.in, s.On(), c.want)
		}
	}
	all, _ := Profile("cloudstack-4.22")
	fixed, _ := Profile("fixed")
	if len(all.On()) != len(Defects) || len(fixed.On()) != 0 {
		t.Fatalf("cloudstack-4.22 = %v, fixed = %v", all.On(), fixed.On())
	}
	if _, err := Profile("cloudstack-4.19"); err == nil {
		t.Fatal("unknown profile accepted")
	}
}
