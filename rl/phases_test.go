package rl

import (
	"testing"
	"time"
)

// phaseLog records what a trainer tells its phase timer.
type phaseLog struct {
	calls map[Phase]int
	total time.Duration
}

func (l *phaseLog) Phase(p Phase, d time.Duration) {
	l.calls[p]++
	l.total += d
}

// A phase timer is told each phase of a step, as often as it runs, and their time adds up to
// no more than the step's; GRPO has no old log-prob pass of its own. Without one the step is
// the same.
func TestPhaseTimer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		step  func(pt PhaseTimer) (*StepReport, error)
		calls map[Phase]int
	}{
		{"grpo", func(pt PhaseTimer) (*StepReport, error) {
			tr := toyGRPO(t, func(c *GRPOTrainerConfig) { c.Train.Mu = 2 })
			tr.SetPhaseTimer(pt)
			return tr.TrainStep()
		}, map[Phase]int{PhaseRollout: 1, PhaseReward: 1, PhaseReference: 1, PhaseUpdate: 2, PhaseOptimizer: 2}},
		{"ppo", func(pt PhaseTimer) (*StepReport, error) {
			tr := toyPPO(t, nil) // two epochs of one mini-batch
			tr.SetPhaseTimer(pt)
			return tr.TrainStep()
		}, map[Phase]int{PhaseRollout: 1, PhaseReward: 1, PhaseOldLogp: 1, PhaseReference: 1, PhaseUpdate: 2, PhaseOptimizer: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &phaseLog{calls: map[Phase]int{}}
			rep, err := tc.step(log)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []Phase{PhaseRollout, PhaseReward, PhaseOldLogp, PhaseReference, PhaseUpdate, PhaseOptimizer} {
				if log.calls[p] != tc.calls[p] {
					t.Errorf("%s told %d times, want %d", p, log.calls[p], tc.calls[p])
				}
			}
			if s := log.total.Seconds(); !(s > 0) || s > rep.Seconds {
				t.Errorf("phases took %v s of a %v s step", s, rep.Seconds)
			}
			plain, err := tc.step(nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range rep.Metrics {
				if plain.Metrics[k] != v {
					t.Errorf("metric %s: %v timed, %v untimed", k, v, plain.Metrics[k])
				}
			}
		})
	}
}
