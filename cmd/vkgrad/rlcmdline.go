package main

import (
	"encoding/json"
	"io"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/precision"
	"github.com/vkgrad/vkgrad/internal/rlrun"
)

// addRunFlags registers the flags of r's run loop, files, resume, model and precision.
func addRunFlags(fs *pflag.FlagSet, r *rlrun.Run, initHelp string) {
	fs.StringVar(&r.Init, "init", "", initHelp)
	fs.BoolVar(&r.InitTask, "init-task", false, "take the task flags not given here from --init's run: its built-in tasks, or its dataset, fields and verifiers (never its --reward-cmd); without it --init brings only the model")
	fs.StringVar(&r.RunDir, "run-dir", "", "where to write config.json, metrics.jsonl and the checkpoint (default: runs/<command>-<task>-<time>; with --resume: the resumed run's directory)")
	fs.IntVar(&r.Opts.EvalEvery, "eval-every", 0, "also measure held-out accuracy every this many steps (0: only before and after)")
	fs.IntVar(&r.Opts.SaveEvery, "save-every", 100, "write the checkpoint, with optimizer state to continue from, every this many steps (0: only at the end, at --stop-at and on Ctrl-C)")
	fs.IntVar(&r.Opts.StopAt, "stop-at", 0, "save and stop once this many steps are taken, to be continued later with --resume (0: run to --steps)")
	fs.StringSliceVar(&r.ReportTo, "report-to", []string{"jsonl", "tensorboard"}, "records to keep beside metrics.jsonl (always written): tensorboard (event files for TensorBoard), or none")
	fs.BoolVar(&r.Overwrite, "overwrite", false, "replace the run already in --run-dir (default: refuse; continue it with --resume)")
	fs.StringVar(&r.Opts.Resume, "resume", "", "continue a run from its directory, bit for bit on the CPU (parameters, optimizer, reference, RNG and prompt position); only --steps and the run-loop flags may change")
	addLoRAFlags(fs, &r.LoRA)
	fs.IntVar(&r.Opts.LogCompletions, "log-completions", 0, "grpo, ppo: write this many sampled completions a step, with their rewards, to completions.jsonl in the run directory")
	fs.StringVar(&r.Precision, "precision", "fp32", precision.Help)
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

// commandLine is what fs says beyond the settings its flags set, with the flags of a run's
// settings bound afresh to compare a resumed run's with those given.
func commandLine(fs *pflag.FlagSet, spec resumeSpec) rlrun.CommandLine {
	return rlrun.CommandLine{
		Given:     givenFlags(fs),
		Defined:   definedFlags(fs),
		TaskFlags: func(t *rlrun.Tasks) rlrun.Flags { return bindFlags(func(fs *pflag.FlagSet) { addTaskFlags(fs, t) }) },
		SettingFlags: func(r *rlrun.Run) rlrun.Flags {
			return bindFlags(func(fs *pflag.FlagSet) {
				fs.StringVar(&r.Init, "init", r.Init, "")
				fs.StringVar(&r.Precision, "precision", r.Precision, "")
				addTaskFlags(fs, &r.Tasks)
				addLoRAFlags(fs, &r.LoRA)
				if spec.episodes {
					addEnvFlags(fs, &r.Env)
				}
				spec.register(fs)
			})
		},
		Decode:    spec.decode,
		MayChange: spec.mayChange,
	}
}

// givenFlags are the flags given on fs's command line, by name, as their values print.
func givenFlags(fs *pflag.FlagSet) map[string]string {
	given := map[string]string{}
	fs.Visit(func(f *pflag.Flag) { given[f.Name] = f.Value.String() })
	return given
}

// definedFlags are the names of fs's flags.
func definedFlags(fs *pflag.FlagSet) map[string]bool {
	defined := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { defined[f.Name] = true })
	return defined
}

// boundFlags are flags registered on a set of their own, bound to some settings (rlrun.Flags).
type boundFlags struct{ *pflag.FlagSet }

func bindFlags(register func(*pflag.FlagSet)) boundFlags {
	fs := pflag.NewFlagSet("saved", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	register(fs)
	return boundFlags{fs}
}

func (b boundFlags) Value(name string) (string, bool) {
	f := b.Lookup(name)
	if f == nil {
		return "", false
	}
	return f.Value.String(), true
}
