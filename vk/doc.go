// Package vk is vkgrad's Vulkan compute runtime and the Vulkan implementation of
// tensor.Backend. It needs no cgo: the loader (libvulkan.so.1, vulkan-1.dll,
// libvulkan.1.dylib or MoltenVK) is opened at run time with purego, and the small compute
// subset of the API is bound by hand (structs.go, checked against vulkan_core.h by
// layout_test.go). Without a loader or device the entry points return errors for which
// IsUnavailable is true, so callers can fall back to the CPU.
//
// Layers, bottom up:
//
//   - Instance: API 1.1+, portability enumeration for MoltenVK, and with VKGRAD_VALIDATION=1
//     the Khronos validation layer (including synchronization validation) whose messages are
//     collected by Instance.ValidationMessages.
//   - Devices, Select, Describe: what `vkgrad devices` shows and how --device picks one.
//   - Device: one compute queue; a pool that sub-allocates tensors from large device-local
//     blocks (best fit, coalescing free lists, dedicated blocks for big tensors); a
//     host-visible staging ring for Upload and Download; pipelines built from the embedded
//     SPIR-V of package shaders, specialised for their workgroup size and kept in an on-disk
//     pipeline cache; and a recorder that puts every dispatch into one command buffer,
//     inserts a barrier only before a dispatch that touches bytes an unbarriered earlier one
//     wrote (or writes bytes one read), and submits at Sync or at a host read. Descriptor
//     sets are written once per (set layout, buffer ranges) and reused (descriptors.go).
//   - Backend: tensor.Backend on a Device. Kernels that reduce (norms, softmaxes, sums) come
//     in two variants, a shared-memory tree (shaders/X.comp) and subgroup arithmetic
//     (shaders/X_sg.comp); reduceKernel picks the subgroup one where the device has subgroup
//     arithmetic in compute shaders, unless VKGRAD_NO_SUBGROUP=1, and fixes its subgroup size
//     where the device allows (reduce_kernels.go).
//
// Adding a kernel: write shaders/NAME.comp following the conventions in package shaders,
// run `go generate ./shaders`, declare a struct for its push-constant block in push.go (and
// list it in TestPushStructsMatchTheirShaders, which checks it against the SPIR-V), then bind
// each tensor with Device.Window (which aligns the descriptor offset and returns the element
// offset the shader must add, Window.First) and record it with Device.Dispatch, passing the
// First values in the push constants:
//
//	k := Kernel{Shader: "add", Bindings: 3, Push: 4, Local: [3]uint32{256, 1, 1}}
//	wo, _ := d.Window(outBuf, outOff, n)
//	wa, _ := d.Window(aBuf, aOff, n)
//	wb, _ := d.Window(bBuf, bOff, n)
//	push := binaryPush{N: uint32(n), OffOut: wo.First, OffA: wa.First, OffB: wb.First}
//	err := d.Dispatch(k, [3]uint32{groups, 1, 1}, pushOf(&push), Arg{W: wo, Write: true}, Arg{W: wa}, Arg{W: wb})
//
// A window may span at most MaxWindowElems elements (maxStorageBufferRange); larger tensors
// are processed in chunks, as Backend's one-dimensional ops do.
//
// Once a kernel's pipeline is built, recording and submitting allocate nothing on the Go
// heap (TestOpsAllocateNothing): the structures handed to Vulkan live in the Device's
// recorder and C calls on that path go through Device.rcall, and ops keep their operands in
// fixed-size arrays (MaxBindings) and their push constants in structs, on the stack. Note that
// a closure that returns a slice, or a slice passed to a function value, escapes to the heap.
package vk
