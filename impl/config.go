package impl

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ConfigKey is one global setting with CloudStack's default and the range of values it accepts.
type ConfigKey struct {
	Name, Default, Unit, Description string
	// Min and Max bound a numeric key (both inclusive); Whole says it is an integer in CloudStack
	// (an Integer or Long ConfigKey). A value outside is refused: CloudStack refuses 0 and negative
	// values of its interval keys (ConfigurationManagerImpl.validateConfigurationValue, the keys of
	// populateConfigValuesForValidationSet), and the others are bounded here so that no value can
	// make a periodic task spin (a zero interval) or overflow a duration.
	Min, Max float64
	Whole    bool
	// Values lists the words a vocabulary key accepts (empty for numbers and booleans).
	Values []string
	// Timeouts: the value is a list of Command=seconds pairs (commands.timeout).
	Timeouts bool
}

const (
	day  = 86400.0
	year = 365 * day
)

// ConfigKeys lists the settings the reference implementation reads, with CloudStack's defaults.
var ConfigKeys = []ConfigKey{
	{Name: "ping.interval", Default: "60", Unit: "s", Description: "agent ping period; the power-report graceful period is twice this", Min: 1, Max: day, Whole: true},
	{Name: "ping.timeout", Default: "2.5", Unit: "×ping.interval", Description: "an agent is behind on ping after ping.interval × ping.timeout", Min: 1, Max: 100},
	{Name: "wait", Default: "1800", Unit: "s", Description: "default wait for a synchronous command (StartCommand, StopCommand)", Min: 1, Max: day, Whole: true},
	{Name: "alert.wait", Default: "1800", Unit: "s", Description: "how long a disconnected host may stay before it goes to Alert", Min: 1, Max: day, Whole: true},
	{Name: "job.expire.minutes", Default: "1440", Unit: "min", Description: "job GC: unfinished jobs created this long ago are expunged; the orphaned-network cleanup's threshold", Min: 1, Max: year / 60, Whole: true},
	{Name: "job.cancel.threshold.minutes", Default: "60", Unit: "min", Description: "job GC: a queue item in process this long is cancelled (its job FAILED) and purged, so the queue moves on", Min: 1, Max: year / 60, Whole: true},
	{Name: "network.gc.interval", Default: "600", Unit: "s", Description: "network garbage collector period", Min: 1, Max: day, Whole: true},
	{Name: "network.gc.wait", Default: "600", Unit: "s", Description: "a network must be seen free twice this far apart before GC shuts it down", Min: 1, Max: day, Whole: true},
	{Name: "network.lock.timeout", Default: "600", Unit: "s", Description: "acquireInLockTable timeout for implement/shutdown", Min: 1, Max: day, Whole: true},
	{Name: "vm.destroy.forcestop", Default: "false", Description: "use forced stop on destroy and expunge"},
	{Name: "start.retry", Default: "10", Description: "attempts of the plan/prepare/StartCommand loop", Min: 1, Max: 100, Whole: true},
	{Name: "vm.op.lock.state.retry", Default: "5", Description: "Stopped → Starting attempts", Min: 1, Max: 100, Whole: true},
	{Name: "vm.job.check.interval", Default: "3000", Unit: "ms", Description: "how often a caller polls its VM work job", Min: 10, Max: day * 1000, Whole: true},
	{Name: "vm.job.timeout", Default: "600000", Unit: "ms", Description: "declared by VMMI (\"to wait before attempting to cancel a job\"); no caller's wait reads it, OutcomeImpl.get waits for ever; the checkers' liveness bound counts it", Min: 1000, Max: 7 * day * 1000, Whole: true},
	{Name: "vm.job.report.interval", Default: "60", Unit: "s", Description: "VMMI CleanupTask period; the stall scan on each ping takes twice this as milliseconds, as the Java does", Min: 1, Max: day, Whole: true},
	{Name: "vm.sync.power.state.transitioning", Default: "true", Description: "run the stall scan of VMs in transition on each ping of an Up host (read at start)"},
	{Name: "vm.op.wait.interval", Default: "120", Unit: "s", Description: "checkWorkItems' wait step (a start of a VM in transition); a VM in transition on a host not Up is reported stuck after this long without a power update", Min: 1, Max: day, Whole: true},
	{Name: "vm.op.cancel.interval", Default: "3600", Unit: "s", Description: "checkWorkItems gives up on an op_it_work row inactive this long (the start fails: concurrent operations)", Min: 1, Max: day, Whole: true},
	{Name: "vm.op.cleanup.interval", Default: "86400", Unit: "s", Description: "VMMI TransitionTask period (read at start)", Min: 1, Max: year, Whole: true},
	{Name: "lock.poll.interval", Default: "1", Unit: "s", Description: "lock-table retry cadence while waiting (Merovingian2)", Min: 0.01, Max: 3600},
	{Name: "stop.retry.interval", Default: "600", Unit: "s", Description: "HA: when a failed CheckStop is tried again", Min: 1, Max: day, Whole: true},
	{Name: "restart.retry.interval", Default: "600", Unit: "s", Description: "HA: when a failed restart (or an unfenced VM) is tried again", Min: 1, Max: day, Whole: true},
	{Name: "investigate.retry.interval", Default: "60", Unit: "s", Description: "HA: when a VM alive on a host that is not Up is investigated again", Min: 1, Max: day, Whole: true},
	{Name: "direct.agent.load.size", Default: "16", Description: "AgentManagerImpl: the AgentTaskPool's threads (DirectAgentLoadSize), on which disconnect investigations run (read when a task is submitted)", Min: 1, Max: 1000, Whole: true},
	{Name: "ha.workers", Default: "5", Description: "HA: the worker threads of each server (HighAvailabilityManager.HAWorkers)", Min: 1, Max: 100, Whole: true},
	{Name: "time.to.sleep", Default: "60", Unit: "s", Description: "HA: how long an idle HA worker sleeps before it looks for work", Min: 1, Max: day, Whole: true},
	{Name: "ha.vm.restart.hostup", Default: "true", Description: "HA-enabled VMs stopped out of band on an Up host are restarted"},
	// An agent.properties key, not a management-server one: every simulated KVM host's agent reads it
	// (AgentProperties.REBOOT_HOST_AND_ALERT_MANAGEMENT_ON_HEARTBEAT_TIMEOUT).
	{Name: "reboot.host.and.alert.management.on.heartbeat.timeout", Default: "true", Description: "agent.properties of every KVM host: after heartbeat.update.max.tries failed writes of its storage heartbeat, KVMHAMonitor reboots the host (kvmheartbeat.sh -c), killing its domains"},
	{Name: "commands.timeout", Default: "", Unit: "s", Description: "per-command waits that replace the command's own, e.g. CheckHealthCommand=5,CheckOnHostCommand=5 (AgentManagerImpl's granular wait)", Timeouts: true},
	{Name: "router.ready.timeout", Default: "300", Unit: "s", Description: "how long a router start waits for the guest to be ready", Min: 1, Max: day, Whole: true},
	// Not a CloudStack key: which reading of implementNetwork's last transition the reference runs
	// (ImplementFinalTransition).
	{Name: "network.implement.final.transition", Default: string(FinalTransitionReread), Description: "implementNetwork's last OperationSucceeded: reread = validated against the row as it is now (a Shutdown written meanwhile goes Allocated, as the D1 report observed); in-memory = on the thread's own copy, Implementing → Implemented, overwriting the row (the Java as read)",
		Values: []string{string(FinalTransitionReread), string(FinalTransitionInMemory)}},
}

// ImplementFinalTransition is the choice of network.implement.final.transition. The Java read
// (NetworkOrchestrator.implementNetwork, apache@0035c613) fires OperationSucceeded on its in-memory
// NetworkVO, which is still Implementing, and NetworkDaoImpl.updateState does not compare the state
// column: a Shutdown written meanwhile by the orphaned-network cleanup is overwritten with Implemented.
// The D1 report observed networks left Allocated with their router running, which is what validating
// against the row gives (Shutdown → OperationSucceeded → Allocated). Which one 4.22 does is unresolved
// (spec section 8), so both are runnable.
type ImplementFinalTransition string

const (
	// FinalTransitionReread validates the last transition against the row re-read after the elements
	// are implemented (the default: the behaviour the D1 report observed).
	FinalTransitionReread ImplementFinalTransition = "reread"
	// FinalTransitionInMemory transitions the implementing thread's own copy and writes it over the row.
	FinalTransitionInMemory ImplementFinalTransition = "in-memory"
)

// ImplementFinalTransition reads network.implement.final.transition.
func (c *Config) ImplementFinalTransition() ImplementFinalTransition {
	return ImplementFinalTransition(c.Get("network.implement.final.transition"))
}

// Range says which values a numeric key accepts ("" for a boolean).
func (k ConfigKey) Range() string {
	if len(k.Values) > 0 {
		return strings.Join(k.Values, "|")
	}
	if k.Timeouts {
		return "Command=seconds,…"
	}
	if k.Default == "true" || k.Default == "false" {
		return "true|false"
	}
	r := strconv.FormatFloat(k.Min, 'g', -1, 64) + ".." + strconv.FormatFloat(k.Max, 'g', -1, 64)
	if k.Whole {
		r += " (whole)"
	}
	return r
}

// check refuses a value the key does not accept, naming the key and its range.
func (k ConfigKey) check(value string) error {
	if len(k.Values) > 0 {
		if !slices.Contains(k.Values, value) {
			return fmt.Errorf("configuration %s: %q is not one of %s", k.Name, value, k.Range())
		}
		return nil
	}
	if k.Timeouts {
		if _, err := parseCommandTimeouts(value); err != nil {
			return fmt.Errorf("configuration %s: %v", k.Name, err)
		}
		return nil
	}
	if k.Default == "true" || k.Default == "false" {
		if _, err := strconv.ParseBool(value); err != nil {
			return fmt.Errorf("configuration %s: %q is not a boolean", k.Name, value)
		}
		return nil
	}
	v, err := strconv.ParseFloat(value, 64)
	if err != nil {
		return fmt.Errorf("configuration %s: %q is not a number", k.Name, value)
	}
	if math.IsNaN(v) || v < k.Min || v > k.Max || (k.Whole && v != math.Trunc(v)) {
		return fmt.Errorf("configuration %s: %s is out of range: %s accepts %s", k.Name, value, k.Name, k.Range())
	}
	return nil
}

// LookupConfigKey finds a key by name.
func LookupConfigKey(name string) (ConfigKey, bool) {
	for _, k := range ConfigKeys {
		if k.Name == name {
			return k, true
		}
	}
	return ConfigKey{}, false
}

// Config holds the current values. Like CloudStack's dynamic keys, a value is read at each use.
type Config struct {
	mu     sync.RWMutex // a value may be changed while the server's threads read it
	values map[string]string
	// nums holds the numeric values parsed, until Set changes them: power sync reads ping.interval for
	// each report, and parsing it each time was a tenth of a 200-host day
	nums map[string]float64
}

// NewConfig returns the defaults with overrides applied; an unknown key or a bad value is an error.
func NewConfig(overrides map[string]string) (*Config, error) {
	c := &Config{values: make(map[string]string, len(ConfigKeys))}
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

// Set changes a key (updateConfiguration); a value outside the key's range is refused.
func (c *Config) Set(name, value string) error {
	k, ok := LookupConfigKey(name)
	if !ok {
		return fmt.Errorf("unknown configuration key %q", name)
	}
	if err := k.check(value); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.values[name] = value
	delete(c.nums, name)
	return nil
}

// Get returns a key's value as text.
func (c *Config) Get(name string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.values[name]
}

func (c *Config) num(name string) float64 {
	c.mu.RLock()
	v, ok := c.nums[name]
	if ok {
		c.mu.RUnlock()
		return v
	}
	text := c.values[name]
	c.mu.RUnlock()
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		panic(fmt.Sprintf("config %s: %v", name, err))
	}
	c.mu.Lock()
	if c.values[name] == text { // not Set meanwhile
		if c.nums == nil {
			c.nums = map[string]float64{}
		}
		c.nums[name] = v
	}
	c.mu.Unlock()
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

// CommandTimeout is commands.timeout's wait for a command kind (0: none set).
func (c *Config) CommandTimeout(kind string) time.Duration {
	m, _ := parseCommandTimeouts(c.Get("commands.timeout"))
	return m[kind]
}

// parseCommandTimeouts reads "DhcpEntryCommand=600, SavePasswordCommand=300".
func parseCommandTimeouts(v string) (map[string]time.Duration, error) {
	m := map[string]time.Duration{}
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		name, secs, ok := strings.Cut(p, "=")
		n, err := strconv.Atoi(strings.TrimSpace(secs))
		if !ok || strings.TrimSpace(name) == "" || err != nil || n < 1 || n > int(day) {
			return nil, fmt.Errorf("%q is not Command=seconds (1..%d)", p, int(day))
		}
		m[strings.TrimSpace(name)] = time.Duration(n) * time.Second
	}
	return m, nil
}
