package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/device"
	"github.com/vkgrad/vkgrad/mpi"
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
			fmt.Fprintf(stdout, "cpu  %d threads (%s/%s)\n", runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
			if verr != nil {
				fmt.Fprintf(stdout, "vulkan: %v\n", verr)
			}
			for _, d := range devs {
				fmt.Fprintln(stdout, vk.Describe(d))
			}
			b, reason, err := device.Open("auto", device.Options{})
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "--device auto -> %s: %s\n", b.Name(), reason)
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
	fmt.Fprintf(stdout, "%s: --device auto -> %s\n", cl.describe(), c.device)
	return nil
}
