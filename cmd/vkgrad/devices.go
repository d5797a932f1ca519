package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/doctor"
	"github.com/vkgrad/vkgrad/internal/sysinfo"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/tensor/cpu/gemm"
	"github.com/vkgrad/vkgrad/vk"
)

// devicesCommand is `vkgrad devices`.
func devicesCommand() command {
	return command{name: "devices", summary: "list the CPU and every Vulkan device, and which one --device auto picks", setup: func(fs *pflag.FlagSet) func([]string) error {
		asJSON := fs.Bool("json", false, "print the Vulkan devices as JSON")
		return func(args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("devices takes no arguments, got %q", args)
			}
			if mpi.Launched(os.Getenv) {
				return devicesPerRank()
			}
			devs, verr := vk.Devices()
			if *asJSON {
				raw, err := json.MarshalIndent(devs, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintln(stdout, string(raw))
				return verr
			}
			fmt.Fprintf(stdout, "cpu  %s\n", cpuSummary())
			if verr != nil {
				fmt.Fprintf(stdout, "vulkan: %v\n", verr)
			}
			for _, d := range devs {
				fmt.Fprintln(stdout, vk.Describe(d))
			}
			auto, err := doctor.AutoDevice()
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "--device auto -> %s\n", auto)
			return nil
		}
	}}
}

// devicesPerRank prints, under an MPI launcher, the device each rank takes with --device auto:
// its machine's GPU by local rank, or the CPU.
func devicesPerRank() error {
	c := &commonFlags{device: "auto"}
	cl, err := c.joinCluster()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: --device auto -> %s\n", cl.Describe(), c.device)
	return nil
}

// cpuSummary is the CPU as `vkgrad devices` shows it: model, threads,
// platform, and the matmul kernel its SIMD features select.
func cpuSummary() string {
	model := sysinfo.CPUModel()
	if model == "" {
		model = "unknown model"
	}
	return fmt.Sprintf("%s, %d threads (%s/%s), matmul kernel %s", model, runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, gemm.KernelName())
}
