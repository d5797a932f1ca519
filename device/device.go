// Package device opens the compute backend a device name asks for.
//
// [Open] accepts "cpu", "vulkan", "vulkan:N" and "auto" (or the empty name), and returns a
// [tensor.Backend] together with one line that says which device it chose and why. "auto" tries a
// discrete, then an integrated GPU through Vulkan and falls back to the CPU; "vulkan" and
// "vulkan:N" never fall back.
package device

import (
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
	"github.com/vkgrad/vkgrad/vk"
)

// Options tune the backends.
type Options struct {
	// Threads for the CPU backend; 0 uses every core.
	Threads int
}

// Open returns the backend named by spec. "auto" picks a discrete, then an integrated GPU
// through Vulkan and falls back to the CPU; "vulkan" and "vulkan:N" never fall back.
func Open(spec string, opt Options) (tensor.Backend, string, error) {
	spec = strings.ToLower(strings.TrimSpace(spec))
	switch {
	case spec == "cpu":
		b := newCPU(opt)
		return b, fmt.Sprintf("cpu: asked for (%d threads)", b.Threads()), nil
	case spec == "auto" || spec == "":
		if b, reason, err := openVulkan("auto"); err == nil {
			return b, reason, nil
		} else {
			c := newCPU(opt)
			return c, fmt.Sprintf("cpu (%d threads): %v", c.Threads(), err), nil
		}
	case spec == "vulkan" || strings.HasPrefix(spec, "vulkan:"):
		b, reason, err := openVulkan(spec)
		if err != nil {
			return nil, "", fmt.Errorf("device %q: %w", spec, err)
		}
		return b, reason, nil
	}
	return nil, "", fmt.Errorf("device %q: want auto, cpu, vulkan or vulkan:N", spec)
}

// OpenLogged is Open for a command: threads CPU threads (0: every core), the choice logged in
// one line, and the Vulkan validation layer's messages logged as they arrive when
// VKGRAD_VALIDATION=1 turned it on. Its errors name the flags that set spec and threads,
// --device and --threads.
func OpenLogged(spec string, threads int, log zerolog.Logger) (tensor.Backend, error) {
	if threads < 0 {
		return nil, fmt.Errorf("--threads %d must be >= 0", threads)
	}
	b, reason, err := Open(spec, Options{Threads: threads})
	if err != nil {
		return nil, fmt.Errorf("--device: %w", err)
	}
	log.Info().Str("device", b.Name()).Msg(reason)
	if vb, ok := b.(*vk.Backend); ok {
		logValidation(vb.Device().Instance(), log)
	}
	return b, nil
}

func newCPU(opt Options) *cpu.Backend {
	if opt.Threads > 0 {
		return cpu.NewWithThreads(opt.Threads)
	}
	return cpu.New()
}
