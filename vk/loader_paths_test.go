package vk

import (
	"slices"
	"testing"
)

func TestDarwinLibraryNamesSearchSDKAndHomebrew(t *testing.T) {
	env := map[string]string{"VULKAN_SDK": "/sdk/macOS"}
	got := darwinLibraryNames(func(k string) string { return env[k] })
	for _, want := range []string{
		"libvulkan.1.dylib",
		"/sdk/macOS/lib/libvulkan.1.dylib",
		"/opt/homebrew/lib/libvulkan.1.dylib",
		"/usr/local/lib/libvulkan.1.dylib",
		"/opt/homebrew/lib/libMoltenVK.dylib",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("macOS loader candidates %v lack %s", got, want)
		}
	}
	// A bare name first: a loader the user put on DYLD_LIBRARY_PATH wins over fixed folders.
	if got[0] != "libvulkan.1.dylib" {
		t.Errorf("first candidate %q, want the bare libvulkan.1.dylib", got[0])
	}
	if i, j := slices.Index(got, "/sdk/macOS/lib/libvulkan.1.dylib"), slices.Index(got, "/opt/homebrew/lib/libvulkan.1.dylib"); i > j {
		t.Errorf("$VULKAN_SDK/lib (at %d) should be tried before Homebrew (at %d)", i, j)
	}
	without := darwinLibraryNames(func(string) string { return "" })
	for _, n := range without {
		if n == "lib/libvulkan.1.dylib" || n[0] == '/' && len(n) > 4 && n[:4] == "/lib" {
			t.Errorf("an unset VULKAN_SDK must add no folder, got %s", n)
		}
	}
}
