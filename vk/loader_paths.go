package vk

import "path/filepath"

// darwinLibraryNames lists the loaders to try on macOS: the bare names first (found through
// DYLD_LIBRARY_PATH and the dyld defaults), then the same names in the folders where the
// Vulkan SDK and Homebrew install them, which dlopen does not search for a bare name.
func darwinLibraryNames(getenv func(string) string) []string {
	// The LunarG SDK installs libvulkan.1.dylib; MoltenVK alone also exports the loader API.
	names := []string{"libvulkan.1.dylib", "libvulkan.dylib", "libMoltenVK.dylib"}
	var dirs []string
	if sdk := getenv("VULKAN_SDK"); sdk != "" {
		dirs = append(dirs, filepath.Join(sdk, "lib"))
	}
	dirs = append(dirs, "/opt/homebrew/lib", "/usr/local/lib")
	out := append([]string(nil), names...)
	for _, d := range dirs {
		for _, n := range names {
			out = append(out, filepath.Join(d, n))
		}
	}
	return out
}
