package harness

import (
	"fmt"
	"strings"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/guard"
	"github.com/csconform/csconform/model/invariant"
)

// GuardConfig is what the transition guards read of a configuration.
func GuardConfig(cfg *impl.Config) guard.Config {
	return guard.Config{
		PingInterval: cfg.PingInterval(),
		PingTimeout:  cfg.PingTimeout(),
		GCWait:       cfg.Seconds("network.gc.wait"),
		JobExpire:    time.Duration(cfg.Int("job.expire.minutes")) * time.Minute,
		JobCancel:    time.Duration(cfg.Int("job.cancel.threshold.minutes")) * time.Minute,
	}
}

// guardConfigAt is the configuration in force from a time on (a setConfig step changes it mid-run).
type guardConfigAt struct {
	from time.Time
	cfg  guard.Config
}

// SetConfig sets a configuration key, and remembers from when the guards must read the new value.
func (c *Cluster) SetConfig(key, value string) error {
	if c.guardCfgs == nil {
		c.guardCfgs = []guardConfigAt{{cfg: GuardConfig(c.Config)}}
	}
	if err := c.Config.Set(key, value); err != nil {
		return err
	}
	c.guardCfgs = append(c.guardCfgs, guardConfigAt{from: c.Now(), cfg: GuardConfig(c.Config)})
	return nil
}

// GuardViolation is a guard's refusal as an invariant violation: the transition, the guard, and the
// history lines its verdict rests on.
func GuardViolation(v guard.Violation) invariant.Violation {
	lines := make([]string, len(v.Evidence))
	for i, e := range v.Evidence {
		lines[i] = fmt.Sprint(e.Seq)
	}
	return invariant.Violation{Invariant: invariant.TransitionGuard, Object: v.Event.Object, Time: v.Event.Time,
		Message: fmt.Sprintf("%s: %s by %s was not allowed: %s (history lines %s)", v.Guard, v.Row, v.Event.Actor, v.Reason, strings.Join(lines, ", "))}
}

// checkGuards judges every state change of the run's history against the guards (model/guard), each
// under the configuration in force at its time.
func (c *Cluster) checkGuards() {
	cfgs := c.guardCfgs
	if cfgs == nil {
		cfgs = []guardConfigAt{{cfg: GuardConfig(c.Config)}}
	}
	ch := guard.NewChecker(cfgs[0].cfg)
	next := 1
	for e := range c.Rec.History().All() {
		for next < len(cfgs) && !cfgs[next].from.After(e.Time) {
			ch.SetConfig(cfgs[next].cfg)
			next++
		}
		ch.Add(e)
	}
	c.guarded = ch.Judged
	for _, v := range ch.Violations {
		c.report(GuardViolation(v))
	}
	if len(ch.Violations) > 0 {
		SortViolations(c.Violations)
	}
}
