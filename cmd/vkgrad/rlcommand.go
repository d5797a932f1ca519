package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/rlrun"
)

// rlAlgorithm is what the grpo and ppo commands differ in: the rlrun.Algorithm that Run.RL
// drives, and its flags; rlCommand is the rest.
type rlAlgorithm struct {
	rlrun.Algorithm
	name, modelHelp string
	config          any                  // the algorithm's whole config, decoded from a resumed run
	addFlags        func(*pflag.FlagSet) // the shared and the algorithm's own flags
}

// rlCommand is `vkgrad <name>`: its flags set an rlrun.Run and the algorithm's config, and
// rlrun.Run.RL does the run. newAlgorithm makes each run's fresh config.
func rlCommand(name, summary string, newAlgorithm func() rlAlgorithm) command {
	return command{name: name, summary: summary, setup: func(fs *pflag.FlagSet) func([]string) error {
		a := newAlgorithm()
		r := &rlrun.Run{Command: name, Tasks: rlrun.DefaultTasks(), Env: rlrun.DefaultEnv()}
		common := addCommonFlags(fs)
		addTaskFlags(fs, &r.Tasks)
		addEnvFlags(fs, &r.Env)
		addRunFlags(fs, r, a.modelHelp)
		a.addFlags(fs)
		fs.BoolVar(&r.DryRun, "dry-run", false, "print the memory the run needs (parameters, gradients, AdamW, reference, activations, lm head, rollout decoder) against what is available, and exit")
		return func(args []string) error { return runRL(r, a, common, fs, args) }
	}}
}

// runRL is one RL command's run.
func runRL(r *rlrun.Run, a rlAlgorithm, common *commonFlags, fs *pflag.FlagSet, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%s takes no arguments, got %q", a.name, args)
	}
	spec := resumeSpec{decode: func(raw json.RawMessage) error { return json.Unmarshal(raw, a.config) }, register: a.addFlags, episodes: true}
	if err := prepareRun(r, common, fs, spec); err != nil {
		return err
	}
	return r.RL(a.Algorithm)
}

// prepareRun gives r, whose settings the flags in fs set, what it takes from the command: its
// place in an MPI job (joined first: a rank other than 0 keeps quiet), the log, stdout, the
// device to open, the command line and the run loop's hooks.
func prepareRun(r *rlrun.Run, common *commonFlags, fs *pflag.FlagSet, spec resumeSpec) error {
	cl, err := joinRunCluster(common)
	if err != nil {
		return err
	}
	r.Cluster, r.Log, r.Stdout, r.Version = cl, common.logger(), stdout, Version
	if !common.quiet {
		r.Progress = os.Stderr
	}
	r.Device, r.Threads = common.device, common.threads
	r.OnStep = testStepHook
	r.Line = commandLine(fs, spec)
	return nil
}
