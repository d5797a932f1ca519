package vk

import (
	"errors"
	"fmt"
)

var (
	// ErrNoLoader means no Vulkan loader library could be opened; the error wrapping it names
	// the libraries tried.
	ErrNoLoader = errors.New("vk: no Vulkan loader found")
	// ErrNoDevice means the loader works but reports no usable Vulkan device.
	ErrNoDevice = errors.New("vk: no usable Vulkan device")
	// ErrDeviceLost means the device stopped working (driver reset, hang, removal); every later
	// operation on that device fails with it.
	ErrDeviceLost = errors.New("vk: device lost")
	// ErrOutOfMemory means a host or device allocation failed; the error wrapping it names what
	// was being allocated.
	ErrOutOfMemory = errors.New("vk: out of memory")
	// ErrAllocationTooLarge means one tensor is larger than the device allows in a single
	// allocation; the error wrapping it names the tensor, its size and the limit.
	ErrAllocationTooLarge = errors.New("vk: allocation larger than the device allows")
)

// Error is a failed Vulkan call.
type Error struct {
	Op     string // the Vulkan function, e.g. "vkCreateDevice"
	Result int32  // its VkResult
}

func (e *Error) Error() string { return fmt.Sprintf("vk: %s failed: %s", e.Op, result(e.Result)) }

// Is lets errors.Is match ErrDeviceLost and ErrOutOfMemory.
func (e *Error) Is(target error) bool {
	switch result(e.Result) {
	case errDeviceLost:
		return target == ErrDeviceLost
	case errOutOfDeviceMemory, errOutOfHostMemory, errOutOfPoolMemory, errFragmentedPool:
		return target == ErrOutOfMemory
	}
	return false
}

// check turns a VkResult into an error, nil on success (or another non-error status).
func check(op string, r result) error {
	if r >= 0 {
		return nil
	}
	return &Error{Op: op, Result: int32(r)}
}
