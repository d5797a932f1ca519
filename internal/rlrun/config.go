package rlrun

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/nn/optim"
)

// RunMeta is the config.json of an sft, grpo or ppo run.
type RunMeta struct {
	Command string        `json:"command"`
	Model   *gpt2.Config  `json:"model,omitempty"`
	Llama   *llama.Config `json:"llama,omitempty"`
	// HFDir is the Hugging Face directory a Llama-family run's tokenizer comes from.
	HFDir string `json:"hf_dir,omitempty"`
	// LoRA are the adapters added to --init's model.
	LoRA  LoRA   `json:"lora"`
	Init  string `json:"init,omitempty"`
	Tasks Tasks  `json:"tasks"`
	// Env is the environment of a multi-turn run (grpo, ppo --env); nil for single-turn runs.
	Env *Env `json:"env,omitempty"`
	// Precision is the format of the matrix products' operands (--precision); "" is fp32.
	Precision string          `json:"precision,omitempty"`
	Config    json.RawMessage `json:"config"`
	Run       *RunOptions     `json:"run,omitempty"`
}

// RunOptions are the run-loop options of sft, grpo and ppo, saved in config.json. They do not
// change a run's numbers, so a resumed run may set them afresh.
type RunOptions struct {
	// EvalEvery measures held-out accuracy every this many steps (0: before and after only).
	EvalEvery int `json:"eval_every"`
	// SaveEvery writes the checkpoint (with the optimizer state, to continue with --resume)
	// every this many steps; 0 saves only at the end, at --stop-at and on an interrupt.
	SaveEvery int `json:"save_every"`
	// StopAt saves and stops once this many steps are taken, to be continued with --resume; 0
	// runs to the end. It is not carried over by a resume.
	StopAt int `json:"stop_at,omitempty"`
	// Resume is the run directory (or checkpoint) this invocation continued, if any.
	Resume string `json:"resume,omitempty"`
	// LogCompletions writes this many sampled completions a step, with their rewards, to
	// completions.jsonl (grpo and ppo).
	LogCompletions int `json:"log_completions,omitempty"`
}

// ReadInitMeta reads the config.json of the run a checkpoint or run directory (--init)
// belongs to, which must hold task settings, and returns it with its path.
func ReadInitMeta(initPath string) (*RunMeta, string, error) {
	p, err := load.Resolve(initPath)
	if err != nil {
		return nil, "", err
	}
	cfgPath := filepath.Join(filepath.Dir(p), rundir.Config)
	raw, err := rundir.ReadConfig(filepath.Dir(p))
	if err != nil {
		return nil, "", fmt.Errorf("%s is not a vkgrad sft, grpo or ppo run: %w", initPath, err)
	}
	var meta RunMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, "", fmt.Errorf("%s: %w", cfgPath, err)
	}
	if meta.Tasks.Spec == "" {
		return nil, "", fmt.Errorf("%s holds no task settings", cfgPath)
	}
	return &meta, cfgPath, nil
}

// ReadRunMeta reads the config.json at cfgPath of the run --resume continues, which must be
// command's.
func ReadRunMeta(cfgPath, command string) (*RunMeta, error) {
	raw, err := rundir.ReadConfig(filepath.Dir(cfgPath))
	if err != nil {
		return nil, fmt.Errorf("--resume: reading the run's settings: %w", err)
	}
	var meta RunMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, fmt.Errorf("--resume: %s: %w", cfgPath, err)
	}
	if meta.Command != command {
		return nil, fmt.Errorf("--resume: %s: command %q, want %q", cfgPath, meta.Command, command)
	}
	return &meta, nil
}

// writeConfig writes the run's config.json (rank 0 alone): its settings, m's shape and cfg,
// the command's config as its trainer completed it.
func (r *Run) writeConfig(m nn.LM, cfg any) error {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	opts := r.Opts
	if !r.Cluster.Main() {
		return nil
	}
	meta := RunMeta{Command: r.Command, HFDir: r.Family.HFDir, Init: r.Init, Tasks: r.Tasks, Config: raw, Run: &opts, LoRA: r.LoRA, Precision: r.Precision}
	if r.Env.Active() {
		meta.Env = &r.Env
	}
	switch p := m.(type) {
	case *nn.GPT2LM:
		meta.Model = &p.Model.Config
	case *nn.LlamaLM:
		meta.Llama = &p.Model.Config
	}
	return rundir.WriteConfig(r.RunDir, meta)
}

// checkOptimizer refuses bad optimizer settings for a run of steps, naming the flag.
func checkOptimizer(s optim.Settings, steps int) error {
	if err := s.Validate(steps); err != nil {
		return fmt.Errorf("--%w", err)
	}
	return nil
}
