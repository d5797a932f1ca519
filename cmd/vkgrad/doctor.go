package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/doctor"
)

// doctorCommand is `vkgrad doctor`.
func doctorCommand() command {
	return command{name: "doctor", summary: "check the build, CPU, Vulkan, MPI, Hugging Face cache, caches, memory and disk", setup: func(fs *pflag.FlagSet) func([]string) error {
		asJSON := fs.Bool("json", false, "print the report as one JSON object")
		timeout := fs.Duration("timeout", 10*time.Second, "how long each probe may take before it is reported as unanswered")
		return func(args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("doctor takes no arguments, got %q", args)
			}
			if *timeout <= 0 {
				return fmt.Errorf("--timeout must be positive, got %v", *timeout)
			}
			r := doctor.Diagnose(doctor.Options{Version: Version, Timeout: *timeout})
			if *asJSON {
				raw, err := json.MarshalIndent(r, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintln(stdout, string(raw))
				return nil
			}
			r.Print(stdout)
			return nil
		}
	}}
}
