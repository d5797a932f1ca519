// Package rundir is a training run's directory: its files, its claim, its config and metrics.
//
// It names the files, claims the directory for one run (refusing to overwrite another, or
// replacing it on request), writes config.json and the metrics file, and does what a resume
// does to them (dropping the lines of steps taken after the checkpoint).
//
// The trainers of nn/train and rl reach it through internal/runloop ([OpenSteps]); vkgrad's
// commands use the rest directly, with their own checkpoint contents, and the errors of
// [Claim], [OpenMetrics] and [ReportTo] name those commands' flags (--run-dir, --resume,
// --overwrite, --report-to).
package rundir

import (
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/vkgrad/vkgrad/internal/atomicfile"
	"github.com/vkgrad/vkgrad/internal/modelfile"
)

// The files of a run directory.
const (
	// Config holds the run's settings, which a resume restores.
	Config = "config.json"
	// Metrics holds one JSON line per step (and per evaluation), with "step".
	Metrics = "metrics.jsonl"
	// Checkpoint holds the model and, for a resume, the trainer's whole state.
	Checkpoint = "checkpoint.safetensors"
	// Completions holds sampled completions with their rewards, one JSON line each, with "step".
	Completions = "completions.jsonl"
	// Summary holds an RL run's table of per-step statistics, written when it finishes.
	Summary = "summary.txt"
	// Lock keeps a second process out of a directory in use.
	Lock = ".lock"
)

// runFiles are what make a directory a run's: a new run never writes over them.
var runFiles = []string{Config, Metrics, Checkpoint}

// Default is the directory of a run the user did not name: runs/<name>-<time>, in the local
// time of now.
func Default(name string, now time.Time) string {
	return filepath.Join("runs", name+"-"+now.Format("20060102-150405"))
}

// WriteConfig writes v as dir's config.json, indented, atomically.
func WriteConfig(dir string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, Config), append(raw, '\n'), 0o666)
}

// ReadConfig reads dir's config.json, refusing one too large to be a run's settings.
func ReadConfig(dir string) ([]byte, error) {
	return modelfile.Read(filepath.Join(dir, Config), modelfile.Config)
}
