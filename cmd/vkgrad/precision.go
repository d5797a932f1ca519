package main

import (
	"fmt"

	"github.com/vkgrad/vkgrad/nn/train"
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

// applyPrecision sets the device's products to --precision.
func (r *rlRun) applyPrecision() error {
	_, err := setPrecision(r.be, r.precision)
	return err
}

// lossScaler is the dynamic loss scale the RL trainers take in --precision's products.
func (r *rlRun) lossScaler() *train.LossScaler { return lossScalerFor(r.precision) }

// lossScalerFor is the dynamic loss scale fp16 trains with, so that small gradients do not
// vanish in binary16 products; nil in fp32 and bf16.
func lossScalerFor(precision string) *train.LossScaler {
	if precision != "fp16" {
		return nil
	}
	return train.NewLossScaler()
}
