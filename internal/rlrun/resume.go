package rlrun

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/rl"
)

// ReadCheckpoint reads the checkpoint --resume continues at path (a run directory or a file),
// which must hold the trainer state of command (sft, grpo or ppo). A run directory that an
// --overwrite cut short left half replaced is settled first.
func ReadCheckpoint(path, command string) (*load.Loaded, error) {
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

// Resumed is the run --resume continues: its checkpoint and the state its command saved in it.
type Resumed struct {
	*load.Loaded
	RunState
	// HFDir is the Hugging Face directory of a Llama-family run ("" for a GPT-2).
	HFDir string
}

// NewResumed is the run whose checkpoint l is (read by ReadCheckpoint), started from hfDir,
// with the state its command saved.
func NewResumed(l *load.Loaded, hfDir string) (*Resumed, error) {
	rs, err := readRunState(l.State, l.Path)
	if err != nil {
		return nil, err
	}
	return &Resumed{Loaded: l, RunState: rs, HFDir: hfDir}, nil
}

// Checkpoint Meta keys the commands add to a trainer's state: the held-out accuracy before
// training and the summary so far, so a resumed run reports on the whole run, and the reason
// a run ended before its last step.
const (
	MetaEvalBefore = "run_eval_before"
	MetaSummary    = "run_summary"
	MetaStopped    = "run_stopped"
)

// RunState is what a command saves in its checkpoint beside its trainer's state.
type RunState struct {
	// Before is the held-out accuracy before the first step (nil: no held-out set).
	Before *rl.EvalResult
	// Summary accumulates the RL steps taken (nil for sft).
	Summary *rl.Summary
	// Stopped is why the run ended before its last step ("" while it goes on).
	Stopped string
}

// Put writes s into st's Meta, whose other keys it leaves.
func (s *RunState) Put(st *checkpoint.State) error {
	put := func(key string, v any) error {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("saving %s: %w", key, err)
		}
		st.Meta[key] = string(raw)
		return nil
	}
	if s.Before != nil {
		if err := put(MetaEvalBefore, s.Before); err != nil {
			return err
		}
	}
	if s.Summary != nil {
		if err := put(MetaSummary, s.Summary); err != nil {
			return err
		}
	}
	if s.Stopped != "" {
		st.Meta[MetaStopped] = s.Stopped
	}
	return nil
}

// readRunState is the state Put saved in st, the checkpoint at path (named in errors) that
// --resume continues.
func readRunState(st *checkpoint.State, path string) (RunState, error) {
	var s RunState
	m := st.Meta
	if v, ok := m[MetaEvalBefore]; ok {
		if err := json.Unmarshal([]byte(v), &s.Before); err != nil {
			return s, fmt.Errorf("--resume %s: meta %q: %w", path, MetaEvalBefore, err)
		}
	}
	if v, ok := m[MetaSummary]; ok {
		s.Summary = rl.NewSummary()
		if err := json.Unmarshal([]byte(v), s.Summary); err != nil {
			return s, fmt.Errorf("--resume %s: meta %q: %w", path, MetaSummary, err)
		}
	}
	s.Stopped = m[MetaStopped]
	return s, nil
}

// Checkpointer is a trainer the sft, grpo and ppo commands save and resume.
type Checkpointer interface {
	Checkpoint() (*checkpoint.State, error)
	CheckpointView() (*checkpoint.State, error)
	Restore(st *checkpoint.State, path string) error
	// CheckReplicas fails when the ranks' parameters drifted apart (never in one process).
	CheckReplicas() error
}

// loadResume reads the run to continue: its checkpoint and config.json, whose settings replace
// the task flags, --init and the command's config (through r.Line). A flag given on the command
// line must agree with the run's setting unless a resume may change it; the error names it.
func (r *Run) loadResume() (*Resumed, error) {
	given := r.Line.Given
	l, err := ReadCheckpoint(r.Opts.Resume, r.Command)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(l.Path)
	cfgPath := filepath.Join(dir, rundir.Config)
	meta, err := ReadRunMeta(cfgPath, r.Command)
	if err != nil {
		return nil, err
	}
	r.Tasks, r.Init, r.LoRA, r.Precision = meta.Tasks, meta.Init, meta.LoRA, meta.Precision
	if r.Precision == "" {
		r.Precision = "fp32" // runs saved before products had a precision
	}
	r.Env = DefaultEnv()
	if meta.Env != nil {
		r.Env = *meta.Env
	}
	carryOver(&r.Opts, meta.Run, given)
	if err := r.Line.Decode(meta.Config); err != nil {
		return nil, fmt.Errorf("--resume: %s: config: %w", cfgPath, err)
	}
	if err := checkGiven(given, r.Line.SettingFlags(r), r.Line.MayChange, dir); err != nil {
		return nil, err
	}
	res, err := NewResumed(l, meta.HFDir)
	if err != nil {
		return nil, err
	}
	if r.RunDir == "" {
		r.RunDir = dir
	}
	return res, nil
}

// restore continues tr from the resumed run's checkpoint (nothing without --resume); steps is
// the run's total, which must leave a step to take.
func (r *Run) restore(tr Checkpointer, steps int) error {
	res := r.Resumed
	if res == nil {
		return nil
	}
	if res.Stopped != "" {
		return fmt.Errorf("--resume %s: the run ended at step %d (%s); start a new run from it with --init", res.Path, res.State.Step, res.Stopped)
	}
	if steps <= res.State.Step {
		return fmt.Errorf("--resume %s: the run has taken %d of --steps %d; pass a larger --steps to continue it", res.Path, res.State.Step, steps)
	}
	if err := tr.Restore(res.State, res.Path); err != nil {
		return fmt.Errorf("--resume: %w", err)
	}
	r.Log.Info().Int("step", res.State.Step).Int("steps", steps).Str("from", res.Path).Msg("resumed")
	return nil
}

// CheckpointPath is where the run's checkpoint is written.
func (r *Run) CheckpointPath() string { return filepath.Join(r.RunDir, rundir.Checkpoint) }

// save writes the run's checkpoint: the trainer's whole state and the command's (rs).
func (r *Run) save(tr Checkpointer, rs *RunState) (string, error) {
	path := r.CheckpointPath()
	if err := tr.CheckReplicas(); err != nil { // every rank holds the same state; rank 0 writes it
		return "", err
	}
	if !r.Cluster.Main() {
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
