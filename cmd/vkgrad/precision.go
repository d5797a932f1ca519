package main

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

// precisionHelp is the help of --precision.
const precisionHelp = "operands of the matrix products: fp32, bf16 (rounded to bfloat16, summed in float32) or fp16 (rounded to IEEE half, summed in float32; training scales the loss dynamically)"

// setPrecision sets the device's matrix products to --precision name, or says, naming the
// flag and the device, why it cannot.
func setPrecision(be tensor.Backend, name string) (tensor.Precision, error) {
	p, err := tensor.ParsePrecision(name)
	if err != nil {
		return p, fmt.Errorf("--precision: %w", err)
	}
	if err := tensor.SetProductPrecision(be, p); err != nil {
		return p, fmt.Errorf("--precision %s: device %w", p, err)
	}
	return p, nil
}

// applyPrecision sets the device's products to --precision: sft, grpo and ppo have no loss
// scaling, without which binary16 would flush their small gradients to zero.
func (r *rlRun) applyPrecision() error {
	if r.precision == "fp16" {
		return fmt.Errorf("--precision fp16: sft, grpo and ppo do not scale the loss, and small gradients would vanish in binary16; use --precision bf16 (vkgrad train has fp16 with loss scaling)")
	}
	_, err := setPrecision(r.be, r.precision)
	return err
}
