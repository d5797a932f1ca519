package device

import (
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/vk"
)

// openVulkan opens a Vulkan backend; vk.Select keeps auto off CPU implementations (lavapipe).
func openVulkan(spec string) (tensor.Backend, string, error) {
	b, err := vk.NewBackend(spec)
	if err != nil {
		return nil, "", err
	}
	return b, b.Reason(), nil
}
