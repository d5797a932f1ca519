package optim

import (
	"fmt"
	"math"
)

// Cosine is linear warmup to MaxLR over Warmup steps, then cosine decay to MinLR at Total steps.
type Cosine struct {
	MaxLR, MinLR  float32
	Warmup, Total int
}

// Validate names the first inconsistent field.
func (c Cosine) Validate() error {
	switch {
	case !(c.MaxLR > 0) || math.IsInf(float64(c.MaxLR), 1):
		return fmt.Errorf("lr %v must be positive and finite", c.MaxLR)
	case !(c.MinLR >= 0) || c.MinLR > c.MaxLR:
		return fmt.Errorf("min-lr %v must be in [0, lr=%v]", c.MinLR, c.MaxLR)
	case c.Warmup < 0:
		return fmt.Errorf("warmup %d must be non-negative", c.Warmup)
	case c.Total <= 0:
		return fmt.Errorf("total steps %d must be positive", c.Total)
	}
	return nil
}

// At returns the learning rate for step (0-based).
func (c Cosine) At(step int) float32 {
	if step < c.Warmup {
		return c.MaxLR * float32(step+1) / float32(c.Warmup)
	}
	if step >= c.Total || c.Total <= c.Warmup {
		return c.MinLR
	}
	progress := float64(step-c.Warmup) / float64(c.Total-c.Warmup)
	coeff := 0.5 * (1 + math.Cos(math.Pi*progress))
	return c.MinLR + float32(coeff)*(c.MaxLR-c.MinLR)
}
