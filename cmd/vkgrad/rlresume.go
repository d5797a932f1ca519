package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
)

// checkpointer is a trainer the sft, grpo and ppo commands save and resume.
type checkpointer interface {
	Checkpoint() (*checkpoint.State, error)
	CheckpointView() (*checkpoint.State, error)
	Restore(st *checkpoint.State, path string) error
	// CheckReplicas fails when the ranks' parameters drifted apart (never in one process).
	CheckReplicas() error
}

// resumeSpec says how a command restores and checks its own settings on --resume.
type resumeSpec struct {
	// decode reads config.json's "config" (the command's settings) into the command's config.
	decode func(raw json.RawMessage) error
	// register binds the command's own flags to its (now restored) config, so the flags given
	// on the command line can be compared with the run's settings.
	register func(fs *pflag.FlagSet)
	// mayChange lists further flags of the command that a resume may change.
	mayChange []string
	// episodes: the command takes the environment flags (rlrun.Env), restored with the run.
	episodes bool
}

// resumeMayChange are the flags of a run's settings a resume may change: the number of steps
// (which changes the learning-rate schedule from the resume point on, as `vkgrad train
// --resume --steps` does). The flags of the machine (--device, --threads), the logs and the run
// loop (--eval-every, --save-every, --stop-at, --run-dir) are not settings of the run and may
// always be given.
var resumeMayChange = []string{"steps"}

// loadResume reads the run to continue: its checkpoint and config.json, whose settings replace
// the task flags, --init and the command's config (through spec). A flag given on the command
// line must agree with the run's setting unless a resume may change it; the error names it.
func (r *rlRun) loadResume(fs *pflag.FlagSet, command string, spec resumeSpec) (*rlrun.Resumed, error) {
	given := map[string]string{}
	fs.Visit(func(f *pflag.Flag) { given[f.Name] = f.Value.String() })
	l, err := rlrun.ReadCheckpoint(r.opts.Resume, command)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(l.Path)
	cfgPath := filepath.Join(dir, rundir.Config)
	meta, err := rlrun.ReadRunMeta(cfgPath, command)
	if err != nil {
		return nil, err
	}
	r.tasks, r.init, r.lora, r.precision = meta.Tasks, meta.Init, meta.LoRA, meta.Precision
	if r.precision == "" {
		r.precision = "fp32" // runs saved before products had a precision
	}
	r.env = rlrun.DefaultEnv()
	if meta.Env != nil {
		r.env = *meta.Env
	}
	carryOver(&r.opts, meta.Run, given)
	if err := spec.decode(meta.Config); err != nil {
		return nil, fmt.Errorf("--resume: %s: config: %w", cfgPath, err)
	}
	if err := r.checkGiven(given, spec, dir); err != nil {
		return nil, err
	}
	res, err := rlrun.NewResumed(l, meta.HFDir)
	if err != nil {
		return nil, err
	}
	if r.runDir == "" {
		r.runDir = dir
	}
	return res, nil
}

// carryOver takes the run loop's cadence from the resumed run's, unless given again.
func carryOver(o, saved *rlrun.RunOptions, given map[string]string) {
	if saved == nil {
		return
	}
	if _, ok := given["eval-every"]; !ok {
		o.EvalEvery = saved.EvalEvery
	}
	if _, ok := given["save-every"]; !ok {
		o.SaveEvery = saved.SaveEvery
	}
	if _, ok := given["log-completions"]; !ok {
		o.LogCompletions = saved.LogCompletions
	}
}

// checkGiven compares the flags given on the command line with the resumed run's settings
// (now in r and in spec's config): those a resume may change are set, the others must agree.
func (r *rlRun) checkGiven(given map[string]string, spec resumeSpec, dir string) error {
	saved := pflag.NewFlagSet("saved", pflag.ContinueOnError)
	saved.SetOutput(io.Discard)
	saved.StringVar(&r.init, "init", r.init, "")
	saved.StringVar(&r.precision, "precision", r.precision, "")
	addTaskFlags(saved, &r.tasks)
	addLoRAFlags(saved, &r.lora)
	if spec.episodes {
		addEnvFlags(saved, &r.env)
	}
	spec.register(saved)
	may := append(slices.Clone(resumeMayChange), spec.mayChange...)
	for _, name := range slices.Sorted(maps.Keys(given)) {
		f := saved.Lookup(name)
		if f == nil {
			continue // a flag of the machine, the logs or the run loop
		}
		if slices.Contains(may, name) {
			if err := saved.Set(name, given[name]); err != nil {
				return fmt.Errorf("--%s: %w", name, err)
			}
			continue
		}
		if f.Value.String() != given[name] {
			return fmt.Errorf("--%s %s: the run was made with --%s %s, which cannot change when resuming (the continued run would no longer match an uninterrupted one); start a new run with --init %s instead",
				name, given[name], name, f.Value.String(), dir)
		}
	}
	return nil
}

// save writes the run's checkpoint: the trainer's whole state and the command's (rs).
func (r *rlRun) save(tr checkpointer, rs *rlrun.RunState) (string, error) {
	path := filepath.Join(r.runDir, rundir.Checkpoint)
	if err := tr.CheckReplicas(); err != nil { // every rank holds the same state; rank 0 writes it
		return "", err
	}
	if !r.cluster.Main() {
		return path, nil
	}
	st, err := tr.CheckpointView() // written below, before the next step
	if err != nil {
		return "", err
	}
	if err := rs.Put(st); err != nil {
		return "", err
	}
	if err := checkpoint.Save(path, st); err != nil {
		return path, err
	}
	r.held.Saved()
	if err := r.completions.Sync(); err != nil {
		return path, err
	}
	return path, r.metricsOut.Sync() // the metrics as durable as the checkpoint
}
