// Package precision applies a command's --precision to a device and to the loss.
//
// The value names the operands of the matrix products (tensor.Precision): fp32, or bf16 and
// fp16 rounded and summed in float32. fp16 also trains with a dynamic loss scale.
package precision

import (
	"fmt"

	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/tensor"
)

// Help is the help of --precision.
const Help = "operands of the matrix products: fp32, bf16 (rounded to bfloat16, summed in float32) or fp16 (rounded to IEEE half, summed in float32; training scales the loss dynamically)"

// Set sets the device's matrix products to --precision name, or says, naming the flag and
// the device, why it cannot.
func Set(be tensor.Backend, name string) (tensor.Precision, error) {
	p, err := tensor.ParsePrecision(name)
	if err != nil {
		return p, fmt.Errorf("--precision: %w", err)
	}
	if err := tensor.SetProductPrecision(be, p); err != nil {
		return p, fmt.Errorf("--precision %s: device %w", p, err)
	}
	return p, nil
}

// LossScaler is the dynamic loss scale fp16 trains with, so that small gradients do not
// vanish in binary16 products; nil in fp32 and bf16.
func LossScaler(name string) *train.LossScaler {
	if name != "fp16" {
		return nil
	}
	return train.NewLossScaler()
}
