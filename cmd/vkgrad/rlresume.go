package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/rl"
)

// checkpointer is a trainer the sft, grpo and ppo commands save and resume.
type checkpointer interface {
	Checkpoint() (*checkpoint.State, error)
	CheckpointView() (*checkpoint.State, error)
	Restore(st *checkpoint.State, path string) error
	// CheckReplicas fails when the ranks' parameters drifted apart (never in one process).
	CheckReplicas() error
}

// Checkpoint Meta keys the commands add to a trainer's state: the held-out accuracy before
// training and the summary so far, so a resumed run reports on the whole run, and the reason
// a run ended before its last step.
const (
	metaEvalBefore = "run_eval_before"
	metaSummary    = "run_summary"
	metaStopped    = "run_stopped"
)

// runState is what a command saves beside its trainer.
type runState struct {
	before  *rl.EvalResult
	summary *rl.Summary // nil for sft
	stopped string
}

// resumedRun is the run --resume continues: its checkpoint and the command's saved state.
type resumedRun struct {
	*load.Loaded
	runState
	hfDir string // the Hugging Face directory of a Llama-family run
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
	// episodes: the command takes the environment flags (envFlags), restored with the run.
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
func (r *rlRun) loadResume(fs *pflag.FlagSet, command string, spec resumeSpec) (*resumedRun, error) {
	given := map[string]string{}
	fs.Visit(func(f *pflag.Flag) { given[f.Name] = f.Value.String() })
	l, err := readRunCheckpoint(r.opts.Resume, command)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(l.Path)
	cfgPath := filepath.Join(dir, rundir.Config)
	meta, err := readRunMeta(cfgPath, command)
	if err != nil {
		return nil, err
	}
	r.tasks, r.init, r.lora, r.precision = meta.Tasks, meta.Init, meta.LoRA, meta.Precision
	if r.precision == "" {
		r.precision = "fp32" // runs saved before products had a precision
	}
	r.env = defaultEnvFlags()
	if meta.Env != nil {
		r.env = *meta.Env
	}
	r.opts.carryOver(meta.Run, given)
	if err := spec.decode(meta.Config); err != nil {
		return nil, fmt.Errorf("--resume: %s: config: %w", cfgPath, err)
	}
	if err := r.checkGiven(given, spec, dir); err != nil {
		return nil, err
	}
	res, err := resumedState(l, meta.HFDir)
	if err != nil {
		return nil, err
	}
	if r.runDir == "" {
		r.runDir = dir
	}
	return res, nil
}

// readRunCheckpoint reads the checkpoint at path (a run directory or a file), which must hold
// the trainer state of command.
func readRunCheckpoint(path, command string) (*load.Loaded, error) {
	rundir.RestoreReplacedAt(path)
	l, err := load.Read(path)
	if err != nil {
		return nil, fmt.Errorf("--resume: %w", err)
	}
	if l.State == nil {
		return nil, fmt.Errorf("--resume %s: %s is a %s, not a vkgrad run checkpoint; start a new run from it with --init", path, l.Path, l.Format)
	}
	switch kind := rl.SavedKind(l.State); kind {
	case command:
		return l, nil
	case "":
		return nil, fmt.Errorf("--resume %s: %s holds no %s trainer state (optimizer, RNG, prompt position): it was not written by vkgrad %s, or by a version that saved only the model; start a new run from it with --init", path, l.Path, command, command)
	default:
		return nil, fmt.Errorf("--resume %s: %s is the checkpoint of a %s run; continue it with vkgrad %s --resume", path, l.Path, kind, kind)
	}
}

// readRunMeta reads a run's config.json, which must be command's.
func readRunMeta(cfgPath, command string) (*rlRunMeta, error) {
	raw, err := rundir.ReadConfig(filepath.Dir(cfgPath))
	if err != nil {
		return nil, fmt.Errorf("--resume: reading the run's settings: %w", err)
	}
	var meta rlRunMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, fmt.Errorf("--resume: %s: %w", cfgPath, err)
	}
	if meta.Command != command {
		return nil, fmt.Errorf("--resume: %s: command %q, want %q", cfgPath, meta.Command, command)
	}
	return &meta, nil
}

// carryOver takes the run loop's cadence from the resumed run's, unless given again.
func (o *runOptions) carryOver(saved *runOptions, given map[string]string) {
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

// resumedState is the run l continues, with the command's state saved in its checkpoint.
func resumedState(l *load.Loaded, hfDir string) (*resumedRun, error) {
	res := &resumedRun{Loaded: l, hfDir: hfDir}
	m := l.State.Meta
	if v, ok := m[metaEvalBefore]; ok {
		if err := json.Unmarshal([]byte(v), &res.before); err != nil {
			return nil, fmt.Errorf("--resume %s: meta %q: %w", l.Path, metaEvalBefore, err)
		}
	}
	if v, ok := m[metaSummary]; ok {
		res.summary = rl.NewSummary()
		if err := json.Unmarshal([]byte(v), res.summary); err != nil {
			return nil, fmt.Errorf("--resume %s: meta %q: %w", l.Path, metaSummary, err)
		}
	}
	res.stopped = m[metaStopped]
	return res, nil
}

// save writes the run's checkpoint: the trainer's whole state and the command's (rs).
func (r *rlRun) save(tr checkpointer, rs *runState) (string, error) {
	path := filepath.Join(r.runDir, rundir.Checkpoint)
	if err := tr.CheckReplicas(); err != nil { // every rank holds the same state; rank 0 writes it
		return "", err
	}
	if !r.cluster.main() {
		return path, nil
	}
	st, err := tr.CheckpointView() // written below, before the next step
	if err != nil {
		return "", err
	}
	put := func(key string, v any) error {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("saving %s: %w", key, err)
		}
		st.Meta[key] = string(raw)
		return nil
	}
	if rs.before != nil {
		if err := put(metaEvalBefore, rs.before); err != nil {
			return "", err
		}
	}
	if rs.summary != nil {
		if err := put(metaSummary, rs.summary); err != nil {
			return "", err
		}
	}
	if rs.stopped != "" {
		st.Meta[metaStopped] = rs.stopped
	}
	if err := checkpoint.Save(path, st); err != nil {
		return path, err
	}
	r.held.Saved()
	if err := r.completions.sync(); err != nil {
		return path, err
	}
	return path, r.metricsOut.Sync() // the metrics as durable as the checkpoint
}
