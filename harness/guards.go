package harness

import (
	"time"

	"github.com/csconform/csconform/detect"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/guard"
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

// SetConfig sets a configuration key, and remembers from when the guards must read the new value.
func (c *Cluster) SetConfig(key, value string) error {
	if c.guardCfgs == nil {
		c.guardCfgs = []detect.GuardConfigAt{{Cfg: GuardConfig(c.Config)}}
	}
	if err := c.Config.Set(key, value); err != nil {
		return err
	}
	c.guardCfgs = append(c.guardCfgs, detect.GuardConfigAt{From: c.Now(), Cfg: GuardConfig(c.Config)})
	return nil
}

// checkGuards judges the run's history against the guards (detect.JudgeGuards).
func (c *Cluster) checkGuards() {
	cfgs := c.guardCfgs
	if cfgs == nil {
		cfgs = []detect.GuardConfigAt{{Cfg: GuardConfig(c.Config)}}
	}
	ch := detect.JudgeGuards(c.Rec.History().All(), cfgs)
	c.guarded = ch.Judged
	for _, v := range ch.Violations {
		c.report(detect.GuardViolation(v))
	}
	if len(ch.Violations) > 0 {
		SortViolations(c.Violations)
	}
}
