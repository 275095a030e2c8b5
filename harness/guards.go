package harness

import (
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/guard"
	"github.com/csconform/csconform/model/history"
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
		Wait:         cfg.Seconds("wait"),
	}
}

// GuardConfigAt is the configuration the guards read from a time on (a setConfig step changes it
// mid-run; a real world's scaled set-up timings end).
type GuardConfigAt struct {
	From time.Time
	Cfg  guard.Config
}

// SetConfig sets a configuration key, and remembers from when the guards must read the new value.
func (c *Cluster) SetConfig(key, value string) error {
	if c.guardCfgs == nil {
		c.guardCfgs = []GuardConfigAt{{Cfg: GuardConfig(c.Config)}}
	}
	if err := c.Config.Set(key, value); err != nil {
		return err
	}
	c.guardCfgs = append(c.guardCfgs, GuardConfigAt{From: c.Now(), Cfg: GuardConfig(c.Config)})
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

// JudgeGuards judges every state change of a history against the guards (model/guard), each under
// the configuration in force at its time (cfgs in time order, the first from the start).
func JudgeGuards(events iter.Seq[history.Event], cfgs []GuardConfigAt) *guard.Checker {
	ch := guard.NewChecker(cfgs[0].Cfg)
	next := 1
	for e := range events {
		for next < len(cfgs) && !cfgs[next].From.After(e.Time) {
			ch.SetConfig(cfgs[next].Cfg)
			next++
		}
		ch.Add(e)
	}
	return ch
}

// checkGuards judges the run's history against the guards (JudgeGuards).
func (c *Cluster) checkGuards() {
	cfgs := c.guardCfgs
	if cfgs == nil {
		cfgs = []GuardConfigAt{{Cfg: GuardConfig(c.Config)}}
	}
	ch := JudgeGuards(c.Rec.History().All(), cfgs)
	c.guarded = ch.Judged
	for _, v := range ch.Violations {
		c.report(GuardViolation(v))
	}
	if len(ch.Violations) > 0 {
		SortViolations(c.Violations)
	}
}
