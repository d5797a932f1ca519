package device

import "github.com/vkgrad/vkgrad/tensor"

// Budget is how much more memory a model on b can take, and where that figure comes from: the
// device's memory budget (or heap size) for a GPU, the process's available RAM for the CPU.
// ok is false where it cannot be told.
func Budget(b tensor.Backend) (bytes uint64, source string, ok bool) { return tensor.Budget(b) }
