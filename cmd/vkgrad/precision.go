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
