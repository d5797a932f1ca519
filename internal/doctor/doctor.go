// Package doctor checks the build, CPU, Vulkan, MPI, caches, memory and disk vkgrad runs with.
//
// [Diagnose] runs every check at once, each bounded in time, and returns a [Report] of them;
// a check that is not ok says what to do.
package doctor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/vkgrad/vkgrad/device"
	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/internal/sysinfo"
	"github.com/vkgrad/vkgrad/internal/trainrun"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/nn/hub"
	"github.com/vkgrad/vkgrad/tensor/cpu/gemm"
	"github.com/vkgrad/vkgrad/vk"
)

// The states a check reports.
const (
	StatusOK      = "ok"
	StatusMissing = "missing"
	StatusWarning = "warning"
)

// sectionBound bounds a section's probes together, in units of one probe's time bound.
const sectionBound = 4

// Thresholds below which doctor warns.
const (
	lowMemory = 2 << 30
	lowDisk   = 5 << 30
)

// Check is one line of the report.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	// Fix says what to do when the status is not ok.
	Fix   string `json:"fix,omitempty"`
	Path  string `json:"path,omitempty"`
	Bytes uint64 `json:"bytes,omitempty"`
	Count int    `json:"count,omitempty"`
	// Models and Datasets count a Hugging Face cache's repositories.
	Models   int `json:"models,omitempty"`
	Datasets int `json:"datasets,omitempty"`
}

// Report is every check, a section per field in the order [Report.Print] shows them.
type Report struct {
	Build       []Check `json:"build"`
	CPU         []Check `json:"cpu"`
	Vulkan      []Check `json:"vulkan"`
	MPI         []Check `json:"mpi"`
	HuggingFace []Check `json:"hugging_face"`
	Caches      []Check `json:"vkgrad_caches"`
	Memory      []Check `json:"memory"`
	Disk        []Check `json:"disk"`
}

// Options are what the checks need to know.
type Options struct {
	Version string        // vkgrad's version, which the build section reports
	Timeout time.Duration // how long each probe may take before it is reported as unanswered
}

// Diagnose runs every section's probes at once, each bounded by o.Timeout; a section, which may
// run a few probes in turn, is given sectionBound times as long.
func Diagnose(o Options) Report {
	timeout := o.Timeout
	var r Report
	probes := []struct {
		into *[]Check
		run  func(time.Duration) []Check
	}{
		{&r.Build, func(time.Duration) []Check { return buildChecks(o.Version) }},
		{&r.CPU, func(time.Duration) []Check { return cpuChecks() }},
		{&r.Vulkan, vulkanChecks},
		{&r.MPI, mpiChecks},
		{&r.HuggingFace, huggingFaceChecks},
		{&r.Caches, cacheChecks},
		{&r.Memory, func(time.Duration) []Check { return memoryChecks() }},
		{&r.Disk, diskChecks},
	}
	var wg sync.WaitGroup
	for _, p := range probes {
		wg.Go(func() {
			checks, err := bounded(sectionBound*timeout, func() ([]Check, error) { return p.run(timeout), nil })
			if err != nil {
				checks = []Check{{Name: "probe", Status: StatusWarning, Detail: err.Error()}}
			}
			*p.into = checks
		})
	}
	wg.Wait()
	return r
}

// bounded runs f and returns its result, or an error once d has passed without one; a panic in
// f comes back as an error too, so no probe can end the report.
func bounded[T any](d time.Duration, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("probe failed: %v", p)}
			}
		}()
		v, err := f()
		done <- result{v, err}
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.v, r.err
	case <-timer.C:
		var zero T
		return zero, fmt.Errorf("no answer within %v", d)
	}
}

// Print writes the report for a person: a heading per section, a line per check, and what to
// do under a check that is not ok.
func (r Report) Print(w io.Writer) {
	sections := []struct {
		title  string
		checks []Check
	}{
		{"build", r.Build}, {"cpu", r.CPU}, {"vulkan", r.Vulkan}, {"mpi", r.MPI},
		{"hugging face", r.HuggingFace}, {"vkgrad caches", r.Caches}, {"memory", r.Memory}, {"disk", r.Disk},
	}
	const nameWidth, statusWidth = 14, 8
	fixIndent := strings.Repeat(" ", 2+nameWidth+1+statusWidth+1)
	for _, s := range sections {
		fmt.Fprintln(w, s.title)
		for _, c := range s.checks {
			fmt.Fprintf(w, "  %-*s %-*s %s\n", nameWidth, c.Name, statusWidth, c.Status, c.Detail)
			if c.Fix != "" {
				fmt.Fprintf(w, "%s-> %s\n", fixIndent, c.Fix)
			}
		}
	}
}

// buildChecks reports vkgrad's version and how the binary was built.
func buildChecks(version string) []Check {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return []Check{{Name: "vkgrad", Status: StatusWarning, Detail: version + ", no build information in the binary",
			Fix: "build with the go command (go build ./cmd/vkgrad) to record the revision"}}
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	detail := version
	if v := info.Main.Version; v != "" && v != "(devel)" {
		detail += ", module " + v
	}
	if rev := settings["vcs.revision"]; rev != "" {
		detail += ", revision " + rev[:min(12, len(rev))]
		if t := settings["vcs.time"]; t != "" {
			detail += " of " + t
		}
		if settings["vcs.modified"] == "true" {
			detail += " (modified)"
		}
	}
	cgo := settings["CGO_ENABLED"]
	if cgo == "" {
		cgo = "unset"
	}
	goLine := fmt.Sprintf("%s %s/%s, CGO_ENABLED=%s", runtime.Version(), runtime.GOOS, runtime.GOARCH, cgo)
	if level := settings["GO"+strings.ToUpper(runtime.GOARCH)]; level != "" {
		goLine += fmt.Sprintf(", GO%s=%s", strings.ToUpper(runtime.GOARCH), level)
	}
	return []Check{
		{Name: "vkgrad", Status: StatusOK, Detail: detail},
		{Name: "go", Status: StatusOK, Detail: goLine},
	}
}

// cpuChecks reports the processor and the kernels its SIMD features select.
func cpuChecks() []Check {
	model := Check{Name: "model", Status: StatusOK, Detail: sysinfo.CPUModel()}
	if model.Detail == "" {
		model.Detail = "(not reported by the system)"
	}
	cores := Check{Name: "cores", Status: StatusOK, Count: runtime.NumCPU(),
		Detail: fmt.Sprintf("%d logical cores, %d used (GOMAXPROCS)", runtime.NumCPU(), runtime.GOMAXPROCS(0))}
	features := strings.Join(sysinfo.SIMDFeatures(), " ")
	if features == "" {
		features = "(none that the kernels use)"
	}
	simd := Check{Name: "simd", Status: StatusOK, Detail: features}
	kernel := Check{Name: "matmul kernel", Status: StatusOK, Detail: gemm.KernelName()}
	if kernel.Detail == "go" {
		kernel.Status = StatusWarning
		kernel.Detail += " (portable, several times slower than the SIMD kernels)"
		kernel.Fix = "the SIMD kernels need AVX2 and FMA (amd64) or NEON (arm64) and a build without the purego tag"
	}
	return []Check{model, cores, simd, kernel}
}

// vulkanChecks reports the loader, every device, and what --device auto picks.
func vulkanChecks(timeout time.Duration) []Check {
	devs, err := bounded(timeout, vk.Devices)
	var out []Check
	switch {
	case errors.Is(err, vk.ErrNoLoader):
		out = append(out, Check{Name: "loader", Status: StatusMissing, Detail: err.Error(),
			Fix: "install the Vulkan loader (libvulkan1 on Debian and Ubuntu, vulkan-loader on Fedora and Arch) and your GPU's Vulkan driver; without it vkgrad runs on the CPU"})
	case err != nil:
		out = append(out, Check{Name: "loader", Status: StatusWarning, Detail: err.Error(),
			Fix: "install or update your GPU's Vulkan driver; `vulkaninfo --summary` shows what the loader sees"})
	case len(devs) == 0:
		out = append(out, Check{Name: "loader", Status: StatusWarning, Detail: "found, but it lists no devices",
			Fix: "install your GPU's Vulkan driver (or mesa-vulkan-drivers for lavapipe on the CPU)"})
	default:
		out = append(out, Check{Name: "loader", Status: StatusOK, Detail: fmt.Sprintf("found, %d device(s)", len(devs)), Count: len(devs)})
	}
	for _, d := range devs {
		out = append(out, deviceCheck(d))
	}
	auto, err := bounded(timeout, AutoDevice)
	switch {
	case err != nil:
		out = append(out, Check{Name: "--device auto", Status: StatusWarning, Detail: err.Error()})
	case strings.HasPrefix(auto, "cpu"):
		out = append(out, Check{Name: "--device auto", Status: StatusWarning, Detail: auto,
			Fix: "runs on the CPU; a GPU with a Vulkan driver trains many times faster"})
	default:
		out = append(out, Check{Name: "--device auto", Status: StatusOK, Detail: auto})
	}
	return out
}

// deviceCheck is one Vulkan device on one line.
func deviceCheck(d vk.DeviceInfo) Check {
	var local uint64
	for _, h := range d.Heaps {
		if h.DeviceLocal {
			local += h.Size
		}
	}
	driver := d.DriverName
	if driver == "" {
		driver = "driver"
	}
	yesNo := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	c := Check{Name: fmt.Sprintf("vulkan:%d", d.Index), Status: StatusOK, Bytes: local,
		Detail: fmt.Sprintf("%s [%s], %s %s, Vulkan %s, %s device-local, subgroup %d, fp16 %s, coopmat %s",
			d.Name, d.Type, driver, d.DriverVersionString(), d.APIVersionString(), sysinfo.FormatBytes(local), d.SubgroupSize,
			yesNo(d.Float16), yesNo(len(d.CoopMatShapes) > 0 || len(d.CoopMatNVShapes) > 0))}
	if d.Unusable != "" {
		c.Status = StatusWarning
		c.Detail += ", unusable: " + d.Unusable
		c.Fix = "update the driver; `vkgrad devices` shows the device's limits"
	}
	return c
}

// launchers are the MPI launchers doctor looks for on PATH.
var launchers = []string{"mpirun", "mpiexec", "mpiexec.mpich", "srun"}

// mpiChecks reports the MPI library Init would load, the launchers on PATH, and whether this
// process runs under one.
func mpiChecks(timeout time.Duration) []Check {
	type found struct{ path, version string }
	lib, err := bounded(timeout, func() (found, error) {
		p, v, err := mpi.FindLibrary(os.Getenv)
		return found{p, v}, err
	})
	var out []Check
	switch {
	case errors.Is(err, mpi.ErrNoMPI):
		out = append(out, Check{Name: "library", Status: StatusMissing, Detail: err.Error(),
			Fix: "only runs on several processes need it: install Open MPI or MPICH, or set VKGRAD_MPI_LIBRARY to the library's path"})
	case err != nil:
		out = append(out, Check{Name: "library", Status: StatusWarning, Detail: err.Error()})
	default:
		out = append(out, Check{Name: "library", Status: StatusOK, Detail: lib.path + ": " + lib.version, Path: lib.path})
	}
	var onPath []string
	for _, l := range launchers {
		if p, err := exec.LookPath(l); err == nil {
			onPath = append(onPath, p)
		}
	}
	if len(onPath) == 0 {
		out = append(out, Check{Name: "launchers", Status: StatusMissing, Detail: "none of " + strings.Join(launchers, ", ") + " on PATH",
			Fix: "install Open MPI, MPICH or Slurm to start a run on several processes"})
	} else {
		out = append(out, Check{Name: "launchers", Status: StatusOK, Detail: strings.Join(onPath, ", "), Count: len(onPath)})
	}
	launched := "no (a single process)"
	if mpi.Launched(os.Getenv) {
		launched = fmt.Sprintf("yes, local rank %d of %d", mpi.LocalRank(os.Getenv), mpi.LocalSize(os.Getenv))
	}
	return append(out, Check{Name: "launched", Status: StatusOK, Detail: launched})
}

// huggingFaceChecks reports the Hugging Face cache and the settings that reach the Hub. The
// token is never shown, only where it comes from.
func huggingFaceChecks(timeout time.Duration) []Check {
	dir := hub.CacheDir()
	out := []Check{cacheDirCheck("cache", dir, timeout, "created when a model is first named ORG/NAME", func(u *dirUsage, rel string) {
		switch {
		case strings.HasPrefix(rel, "models--") && !strings.Contains(rel, string(filepath.Separator)):
			u.models++
		case strings.HasPrefix(rel, "datasets--") && !strings.Contains(rel, string(filepath.Separator)):
			u.datasets++
		}
	})}
	offline := Check{Name: "HF_HUB_OFFLINE", Status: StatusOK, Detail: "off: models not in the cache are downloaded"}
	if hub.OfflineFromEnv() {
		offline.Detail = "on: only the cache is read"
	}
	token := Check{Name: "token", Status: StatusOK, Detail: "set, from " + hub.TokenSource()}
	if hub.TokenSource() == "" {
		token = Check{Name: "token", Status: StatusWarning, Detail: "not set",
			Fix: "gated and private models need one: set HF_TOKEN, or log in with `hf auth login`"}
	}
	endpoint := Check{Name: "HF_ENDPOINT", Status: StatusOK, Detail: hub.DefaultEndpoint + " (default)"}
	if e := os.Getenv("HF_ENDPOINT"); e != "" {
		endpoint.Detail = e
	}
	return append(out, offline, token, endpoint)
}

// cacheChecks reports vkgrad's own caches: tokenised corpora, held-out accuracies, and
// compiled Vulkan pipelines.
func cacheChecks(timeout time.Duration) []Check {
	var out []Check
	if dir, err := trainrun.TokenCacheDir(""); err != nil {
		out = append(out, Check{Name: "tokens", Status: StatusWarning, Detail: err.Error()})
	} else {
		out = append(out, cacheDirCheck("tokens", dir, timeout, "created by the first run that tokenises a corpus", nil))
	}
	if dir, err := rlrun.EvalCacheDir(); err != nil {
		out = append(out, Check{Name: "eval", Status: StatusWarning, Detail: err.Error()})
	} else {
		out = append(out, cacheDirCheck("eval", dir, timeout, "created by the first RL run that measures its held-out accuracy", nil))
	}
	dir, err := vk.PipelineCacheDir()
	if err != nil {
		return append(out, Check{Name: "pipelines", Status: StatusWarning, Detail: err.Error()})
	}
	files, _ := filepath.Glob(filepath.Join(dir, "pipelines-*.bin"))
	var total uint64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			total += uint64(st.Size())
		}
	}
	return append(out, Check{Name: "pipelines", Status: StatusOK, Path: dir, Bytes: total, Count: len(files),
		Detail: fmt.Sprintf("%s: %s in %d file(s)", dir, sysinfo.FormatBytes(total), len(files))})
}

// dirUsage is what a walk of a cache directory found.
type dirUsage struct {
	bytes            uint64
	files            int
	models, datasets int
	partial          bool // the walk ran out of time
}

// walkUsage totals the regular files under dir (links are not followed, so a Hugging Face
// snapshot's links to its blobs count once), stopping at the deadline. classify, when given,
// sees each path relative to dir.
func walkUsage(dir string, deadline time.Time, classify func(u *dirUsage, rel string)) (dirUsage, error) {
	var u dirUsage
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable entry is left out, not fatal
		}
		if time.Now().After(deadline) {
			u.partial = true
			return filepath.SkipAll
		}
		if classify != nil && path != dir {
			if rel, err := filepath.Rel(dir, path); err == nil {
				classify(&u, rel)
			}
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				u.bytes += uint64(info.Size())
				u.files++
			}
		}
		return nil
	})
	return u, err
}

// cacheDirCheck reports a cache directory's size; an absent one is fine, created when needed.
func cacheDirCheck(name, dir string, timeout time.Duration, whenAbsent string, classify func(u *dirUsage, rel string)) Check {
	c := Check{Name: name, Status: StatusOK, Path: dir}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		c.Detail = dir + ": not there yet (" + whenAbsent + ")"
		return c
	} else if err != nil {
		c.Status, c.Detail = StatusWarning, err.Error()
		return c
	}
	// The walk stops itself at the deadline; bounded guards against a filesystem that hangs.
	u, err := bounded(timeout+time.Second, func() (dirUsage, error) { return walkUsage(dir, time.Now().Add(timeout), classify) })
	if err != nil {
		c.Status, c.Detail = StatusWarning, fmt.Sprintf("%s: %v", dir, err)
		return c
	}
	c.Bytes, c.Count = u.bytes, u.files
	c.Detail = fmt.Sprintf("%s: %s in %d file(s)", dir, sysinfo.FormatBytes(u.bytes), u.files)
	if classify != nil {
		c.Models, c.Datasets = u.models, u.datasets
		c.Detail += fmt.Sprintf(", %d model(s), %d dataset(s)", u.models, u.datasets)
	}
	if u.partial {
		c.Status = StatusWarning
		c.Detail += fmt.Sprintf(", at least: the walk stopped after %v", timeout)
		c.Fix = "raise --timeout to count it all"
	}
	return c
}

// memoryChecks reports the memory of the machine (or cgroup) and how much more this process
// can take.
func memoryChecks() []Check {
	total := Check{Name: "total", Status: StatusWarning, Detail: "not readable on " + runtime.GOOS}
	if n, ok := sysinfo.TotalMemory(); ok {
		total = Check{Name: "total", Status: StatusOK, Bytes: n, Detail: sysinfo.FormatBytes(n)}
	}
	avail := Check{Name: "available", Status: StatusWarning, Detail: "not readable on " + runtime.GOOS}
	if n, source, ok := sysinfo.AvailableMemory(); ok {
		avail = Check{Name: "available", Status: StatusOK, Bytes: n, Detail: fmt.Sprintf("%s (%s)", sysinfo.FormatBytes(n), source)}
		if n < lowMemory {
			avail.Status = StatusWarning
			avail.Fix = "close other programs, or train a smaller model or batch (see `vkgrad train --help` for --batch)"
		}
	}
	return []Check{total, avail}
}

// diskChecks reports the free space where runs write: the working directory and the caches.
func diskChecks(timeout time.Duration) []Check {
	places := []struct{ name, dir string }{{"working dir", "."}, {"hf cache", hub.CacheDir()}}
	if dir, err := vk.PipelineCacheDir(); err == nil {
		places = append(places, struct{ name, dir string }{"vkgrad cache", dir})
	}
	var out []Check
	for _, p := range places {
		dir := existingAncestor(p.dir)
		free, err := bounded(timeout, func() (uint64, error) { return freeDisk(dir) })
		c := Check{Name: p.name, Status: StatusOK, Path: dir, Bytes: free}
		switch {
		case err != nil:
			c.Status, c.Detail = StatusWarning, fmt.Sprintf("%s: %v", dir, err)
		default:
			c.Detail = fmt.Sprintf("%s free on %s", sysinfo.FormatBytes(free), dir)
			if free < lowDisk {
				c.Status = StatusWarning
				c.Fix = "checkpoints and downloaded models need room: free some space or point the cache elsewhere"
			}
		}
		out = append(out, c)
	}
	return out
}

// existingAncestor is dir, or the nearest folder above it that exists, whose filesystem dir
// would be created on.
func existingAncestor(dir string) string {
	dir, _ = filepath.Abs(dir)
	for {
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

// AutoDevice opens the backend --device auto picks, closes it again, and says which it is and why.
func AutoDevice() (string, error) {
	b, reason, err := device.Open("auto", device.Options{})
	if err != nil {
		return "", err
	}
	name := b.Name()
	if err := b.Close(); err != nil {
		return "", fmt.Errorf("closing %s: %w", name, err)
	}
	return name + ": " + reason, nil
}
