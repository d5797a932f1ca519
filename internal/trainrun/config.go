package trainrun

import (
	"fmt"
	"path/filepath"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/train"
)

// Config is a train run as its flags set it.
type Config struct {
	Train train.Config
	Data  Data
	// Preset is the shape of a new model (and the name of its run directory); Init, a model to
	// start from instead (ModelChoice).
	Preset, Init string
	// RunDir is where the run's files go ("": runs/<name>-<time>, or the resumed run's own);
	// Resume, the directory of a run to continue.
	RunDir, Resume string
	Loop           LoopSettings
	StopAt         int // save and stop at this step (0: run to Train.Steps)
	// DryRun prints the run's memory and stops; Overwrite replaces a run already in RunDir.
	DryRun, Overwrite bool
	CacheDir          string   // the token cache ("": TokenCacheDir's default)
	ReportTo          []string // records beside metrics.jsonl (rundir.ReportTo)
	// Given says whether a flag was given on the command line (nil: none was). A resumed run
	// refuses a different value of a flag that decides its numbers, and keeps its own value
	// of the others unless given.
	Given func(flag string) bool
}

// LoopSettings are the run-loop settings: saved with the run and carried over by a resume,
// but free to change there since they do not change the numbers.
type LoopSettings struct {
	ValEvery     int    `json:"val_every"`
	SaveEvery    int    `json:"save_every"`
	SampleTokens int    `json:"sample_tokens"`
	SamplePrompt string `json:"sample_prompt,omitempty"`
}

// DefaultConfig is train's settings when no flag is given.
func DefaultConfig() Config {
	cfg := train.DefaultConfig()
	cfg.MicroBatches, cfg.OnNonFinite, cfg.MaxSkips, cfg.Precision = 1, "skip", train.DefaultMaxSkips, "fp32"
	return Config{Train: cfg, Preset: "gpt2-mini", Loop: defaultLoop}
}

// defaultLoop are the run-loop settings by default, and those of runs saved before they were.
var defaultLoop = LoopSettings{ValEvery: 100, SaveEvery: 100, SampleTokens: 96}

// Meta is written as config.json in the run directory.
type Meta struct {
	Model gpt2.Config `json:"model"`
	// Llama is set, and Model unused, for a Llama-family model; HFDir is the Hugging Face
	// directory its tokenizer comes from ("" for GPT-2's).
	Llama *llama.Config `json:"llama,omitempty"`
	HFDir string        `json:"hf_dir,omitempty"`
	Train train.Config  `json:"train"`
	Data  Data          `json:"data"`
	Init  string        `json:"init,omitempty"`
	Run   *LoopSettings `json:"run,omitempty"` // absent in runs saved before it was
}

// Check refuses bad settings before anything is allocated or written, and makes the paths
// absolute, so the run's data is found from any working directory.
func (c *Config) Check() (err error) {
	if c.Loop.ValEvery < 0 || c.Loop.SaveEvery < 0 || c.Loop.SampleTokens < 0 || c.StopAt < 0 {
		return fmt.Errorf("--val-every, --save-every, --stop-at and --sample-tokens must be >= 0")
	}
	if err := c.Train.Validate(); err != nil {
		return fmt.Errorf("--%w", err)
	}
	for _, p := range []*string{&c.Data.Path, &c.Init} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return err
			}
		}
	}
	return nil
}

// given says whether flag was given on the command line.
func (c *Config) given(flag string) bool { return c.Given != nil && c.Given(flag) }
