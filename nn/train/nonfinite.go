package train

import (
	"fmt"
	"math"
	"time"

	"github.com/vkgrad/vkgrad/nn"
)

// DefaultMaxSkips is how many non-finite steps in a row "skip" tolerates before stopping.
const DefaultMaxSkips = 3

func finite(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }

// nonFinite handles a step whose loss or gradient norm is not finite: the update is not
// applied, and the step is skipped or the run stopped with an error that names the step, the
// values and the first parameter whose gradient went bad.
func (t *Trainer) nonFinite(s StepStats, start time.Time) (StepStats, error) {
	s.Skipped, s.Seconds = true, time.Since(start).Seconds()
	s.Reason = fmt.Sprintf("loss %v, gradient norm %v", s.Loss, s.GradNorm)
	if name := t.firstNonFiniteGrad(); name != "" {
		s.Reason += "; first non-finite gradient in " + name
	}
	maxSkips := t.Config.MaxSkips
	if maxSkips == 0 {
		maxSkips = DefaultMaxSkips
	}
	if t.Config.OnNonFinite == "stop" || t.skipsInARow+1 > maxSkips {
		how := "--on-nonfinite stop"
		if t.Config.OnNonFinite != "stop" {
			how = fmt.Sprintf("%d steps in a row", maxSkips)
		}
		return s, fmt.Errorf("step %d: %s (%s); the weights were not updated. Lower the learning rate (now %g) or check the data and the model for NaN or Inf",
			s.Step, s.Reason, how, s.LR)
	}
	t.Skipped++
	t.skipsInARow++
	return s, nil
}

// firstNonFiniteGrad names the first parameter tensor (llm.c order) whose gradient holds NaN
// or Inf, or "" when the gradients cannot be read or are finite.
func (t *Trainer) firstNonFiniteGrad() string {
	g, err := t.Model.Grads().ToHost()
	if err != nil {
		return ""
	}
	return firstNonFinite(t.Model.TrainableSpecs(), g)
}

// firstNonFinite names the first tensor of a flat parameter-shaped buffer holding NaN or Inf,
// with the index inside it.
func firstNonFinite(specs []nn.TensorSpec, flat []float32) string {
	off := 0
	for _, s := range specs {
		for i, v := range flat[off : off+s.Numel] {
			if !finite(v) {
				return fmt.Sprintf("%s[%d] = %v", s.Name, i, v)
			}
		}
		off += s.Numel
	}
	return ""
}
