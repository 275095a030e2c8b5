package impl

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"
)

// ConfigKey is one global setting with CloudStack's default.
type ConfigKey struct {
	Name, Default, Unit, Description string
}

// ConfigKeys lists the settings the reference implementation reads, with CloudStack's defaults.
var ConfigKeys = []ConfigKey{
	{"ping.interval", "60", "s", "agent ping period; the power-report graceful period is twice this"},
	{"ping.timeout", "2.5", "×ping.interval", "an agent is behind on ping after ping.interval × ping.timeout"},
	{"wait", "1800", "s", "default wait for a synchronous command (StartCommand, StopCommand)"},
	{"alert.wait", "1800", "s", "how long a disconnected host may stay before it goes to Alert"},
	{"job.expire.minutes", "1440", "min", "job row expiry; the orphaned-network cleanup's threshold"},
	{"network.gc.interval", "600", "s", "network garbage collector period"},
	{"network.gc.wait", "600", "s", "a network must be seen free twice this far apart before GC shuts it down"},
	{"network.lock.timeout", "600", "s", "acquireInLockTable timeout for implement/shutdown"},
	{"vm.destroy.forcestop", "false", "", "use forced stop on destroy and expunge"},
	{"start.retry", "10", "", "attempts of the plan/prepare/StartCommand loop"},
	{"vm.op.lock.state.retry", "5", "", "Stopped → Starting attempts"},
	{"vm.job.check.interval", "3000", "ms", "how often a caller polls its VM work job"},
	{"vm.job.timeout", "600000", "ms", "how long a caller waits for its VM work job"},
	{"lock.poll.interval", "1", "s", "lock-table retry cadence while waiting (Merovingian2)"},
	{"router.ready.timeout", "300", "s", "how long a router start waits for the guest to be ready"},
}

// Config holds the current values. Like CloudStack's dynamic keys, a value is read at each use.
type Config struct {
	mu     sync.RWMutex // a value may be changed while the server's threads read it
	values map[string]string
}

// NewConfig returns the defaults with overrides applied; an unknown key or a bad value is an error.
func NewConfig(overrides map[string]string) (*Config, error) {
	c := &Config{values: map[string]string{}}
	for _, k := range ConfigKeys {
		c.values[k.Name] = k.Default
	}
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := c.Set(k, overrides[k]); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Set changes a key (updateConfiguration).
func (c *Config) Set(name, value string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	def, ok := c.values[name]
	if !ok {
		return fmt.Errorf("unknown configuration key %q", name)
	}
	switch {
	case def == "true" || def == "false":
		if _, err := strconv.ParseBool(value); err != nil {
			return fmt.Errorf("configuration %s: %q is not a boolean", name, value)
		}
	default:
		if _, err := strconv.ParseFloat(value, 64); err != nil {
			return fmt.Errorf("configuration %s: %q is not a number", name, value)
		}
	}
	c.values[name] = value
	return nil
}

// Get returns a key's value as text.
func (c *Config) Get(name string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.values[name]
}

func (c *Config) num(name string) float64 {
	v, err := strconv.ParseFloat(c.Get(name), 64)
	if err != nil {
		panic(fmt.Sprintf("config %s: %v", name, err))
	}
	return v
}

// Seconds reads a key in seconds as a duration.
func (c *Config) Seconds(name string) time.Duration {
	return time.Duration(c.num(name) * float64(time.Second))
}

// Millis reads a key in milliseconds as a duration.
func (c *Config) Millis(name string) time.Duration {
	return time.Duration(c.num(name) * float64(time.Millisecond))
}

// Int reads a whole-number key.
func (c *Config) Int(name string) int { return int(c.num(name)) }

// Bool reads a boolean key.
func (c *Config) Bool(name string) bool { return c.Get(name) == "true" }

// PingInterval is ping.interval.
func (c *Config) PingInterval() time.Duration { return c.Seconds("ping.interval") }

// PingTimeout is ping.interval × ping.timeout.
func (c *Config) PingTimeout() time.Duration {
	return time.Duration(float64(c.PingInterval()) * c.num("ping.timeout"))
}
