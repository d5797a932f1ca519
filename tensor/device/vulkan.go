package device

import (
	"errors"

	"github.com/vkgrad/vkgrad/tensor"
)

// openVulkan opens a Vulkan backend; auto never picks a CPU implementation (lavapipe).
func openVulkan(spec string) (tensor.Backend, string, error) {
	return nil, "", errors.New("no Vulkan GPU backend in this build")
}
