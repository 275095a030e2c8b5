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

// Values that made the simulator loop for ever (a zero interval) or overflow a duration are refused
// with the key and its range. CloudStack refuses 0 and negative values of ping.interval, wait,
// alert.wait and network.gc.interval (ConfigurationManagerImpl.validateConfigurationValue with
// populateConfigValuesForValidationSet: "Please enter a positive value for the configuration
// parameter"), and whole numbers for its Integer keys.
func TestConfigRefusesValuesOutOfRange(t *testing.T) {
	cases := []struct{ key, value string }{
		{"ping.interval", "0"}, {"ping.interval", "-5"}, {"ping.interval", "NaN"}, {"ping.interval", "Inf"},
		{"ping.interval", "1e300"}, {"ping.interval", "1.5"},
		{"network.gc.interval", "0"}, {"network.gc.wait", "-1"}, {"vm.job.check.interval", "0"},
		{"vm.job.check.interval", "NaN"}, {"lock.poll.interval", "0"}, {"ping.timeout", "0"},
		{"ping.timeout", "+Inf"}, {"job.expire.minutes", "0"}, {"wait", "99999999999"}, {"start.retry", "0"},
		{"alert.wait", "-0"}, {"router.ready.timeout", "1e9"},
	}
	for _, c := range cases {
		_, err := NewConfig(map[string]string{c.key: c.value})
		if err == nil {
			t.Errorf("%s=%s accepted", c.key, c.value)
			continue
		}
		k, _ := LookupConfigKey(c.key)
		if !strings.Contains(err.Error(), c.key) || (!strings.Contains(err.Error(), k.Range()) && !strings.Contains(err.Error(), "not a number")) {
			t.Errorf("%s=%s: error %q does not name the key and its range %s", c.key, c.value, err, k.Range())
		}
	}
	// Set refuses too (updateConfiguration through the API or the control endpoint), and the value stays.
	cfg, err := NewConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set("ping.interval", "0"); err == nil || cfg.Get("ping.interval") != "60" {
		t.Errorf("Set(ping.interval, 0) = %v, value now %s", err, cfg.Get("ping.interval"))
	}
	// every default is in its own range, and the scaled values the worlds use are accepted
	for _, k := range ConfigKeys {
		if err := k.check(k.Default); err != nil {
			t.Errorf("default out of range: %v", err)
		}
	}
	if _, err := NewConfig(map[string]string{"ping.interval": "1", "vm.job.check.interval": "200", "lock.poll.interval": "0.2", "network.gc.interval": "10"}); err != nil {
		t.Errorf("scaled config refused: %v", err)
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
		{"c3", "C3", false},
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
	// the error lists every switch Defects has, derived from it
	_, err := ParseDefects("D7")
	for _, d := range Defects {
		if !strings.Contains(err.Error(), d.Name()) {
			t.Errorf("%v does not name %s", err, d.Name())
		}
	}
	all, _ := ProfileSwitches("cloudstack-4.22")
	fixed, _ := ProfileSwitches("fixed")
	if len(all.On()) != len(Defects) || len(fixed.On()) != 0 {
		t.Fatalf("cloudstack-4.22 = %v, fixed = %v", all.On(), fixed.On())
	}
	if _, err := ProfileSwitches("cloudstack-4.19"); err == nil {
		t.Fatal("unknown profile accepted")
	}
}

// TestConfigNumbersFollowSet: a numeric key read once (and so parsed once) reads the new value after
// Set, as a dynamic key does at each use.
func TestConfigNumbersFollowSet(t *testing.T) {
	c, err := NewConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		set  string
		want time.Duration
	}{{"", 60 * time.Second}, {"10", 10 * time.Second}, {"10", 10 * time.Second}, {"3", 3 * time.Second}} {
		if v.set != "" {
			if err := c.Set("ping.interval", v.set); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 {
			if got := c.PingInterval(); got != v.want {
				t.Fatalf("after Set(%q): ping.interval reads %v, want %v", v.set, got, v.want)
			}
		}
	}
}
