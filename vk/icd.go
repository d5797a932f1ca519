package vk

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Why the loader found no compatible driver. The loader only says VK_ERROR_INCOMPATIBLE_DRIVER;
// the usual causes are no driver manifest at all, or a manifest whose library does not load
// (NVIDIA's libGLX_nvidia.so.0 in a container without the GL dispatch libraries it links).
// diagnoseDrivers reads the manifests where the loader looks and opens each one's library.

// icdManifest is the part of a driver manifest (icd.d/*.json) that names the driver.
type icdManifest struct {
	ICD struct {
		LibraryPath string `json:"library_path"`
	} `json:"ICD"`
}

// driverManifests lists the manifest files the loader reads: those VK_DRIVER_FILES (or the
// older VK_ICD_FILENAMES) names, files or folders, else the icd.d folders of the system's
// configuration and data directories. places is where it looked: none on Windows, whose
// drivers are listed in the registry.
func driverManifests(getenv func(string) string) (files, places []string) {
	if v := getenv("VK_DRIVER_FILES"); v != "" {
		places = filepath.SplitList(v)
	} else if v := getenv("VK_ICD_FILENAMES"); v != "" {
		places = filepath.SplitList(v)
	} else if runtime.GOOS != "windows" {
		dataDirs := getenv("XDG_DATA_DIRS")
		if dataDirs == "" {
			dataDirs = "/usr/local/share:/usr/share"
		}
		places = append(places, "/etc/xdg/vulkan/icd.d", "/etc/vulkan/icd.d")
		for _, d := range filepath.SplitList(dataDirs) {
			places = append(places, filepath.Join(d, "vulkan", "icd.d"))
		}
	}
	for _, p := range places {
		st, err := os.Stat(p)
		switch {
		case err != nil:
		case st.IsDir():
			matches, _ := filepath.Glob(filepath.Join(p, "*.json"))
			files = append(files, matches...)
		default:
			files = append(files, p)
		}
	}
	return files, places
}

// diagnoseDrivers says why no driver may have loaded, or "" when every manifest's library
// opens (the driver itself then refused the instance) or there is nowhere to look.
func diagnoseDrivers(getenv func(string) string) string {
	files, places := driverManifests(getenv)
	if len(places) == 0 {
		return ""
	}
	if len(files) == 0 {
		return fmt.Sprintf("no driver manifest (*.json) in %s: install a Vulkan driver (mesa-vulkan-drivers, or the GPU vendor's)", strings.Join(places, ", "))
	}
	var why []string
	for _, f := range files {
		if reason := manifestProblem(f); reason != "" {
			why = append(why, reason)
		}
	}
	return strings.Join(why, "; ")
}

// manifestProblem says why the driver manifest at path cannot serve, or "".
func manifestProblem(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("driver manifest %s: %v", path, err)
	}
	var m icdManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Sprintf("driver manifest %s is not JSON: %v", path, err)
	}
	lib := m.ICD.LibraryPath
	if lib == "" {
		return fmt.Sprintf("driver manifest %s names no ICD.library_path", path)
	}
	if strings.ContainsRune(lib, '/') && !filepath.IsAbs(lib) { // relative to the manifest
		lib = filepath.Join(filepath.Dir(path), lib)
	}
	if _, err := openLibrary(lib); err != nil {
		return fmt.Sprintf("driver manifest %s names %s, which does not load: %v", path, m.ICD.LibraryPath, err)
	}
	return ""
}
