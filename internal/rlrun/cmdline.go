package rlrun

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// CommandLine is what a run needs of its command line beyond the settings the flags set: which
// flags were given, and the command's flags bound afresh to a run's settings, so that those
// given can be compared with (or set on) a resumed run's, or carried onto --init's tasks.
type CommandLine struct {
	// Given are the flags given on the command line, by name, as their values print.
	Given map[string]string
	// Defined are the names of all the command's flags (errors name a setting by its flag).
	Defined map[string]bool
	// TaskFlags binds the task flags to t.
	TaskFlags func(t *Tasks) Flags
	// SettingFlags binds the flags of a run's settings to r's: --init, --precision, the task,
	// LoRA and (grpo, ppo) environment flags, and the command's own config's.
	SettingFlags func(r *Run) Flags
	// Decode reads config.json's "config" (the command's settings) into the command's config.
	Decode func(raw json.RawMessage) error
	// MayChange lists the command's own flags a resume may change beyond resumeMayChange.
	MayChange []string
}

// Flags are flags bound to some settings.
type Flags interface {
	// Value is the flag's value as it prints; ok is false when the flag is none of these.
	Value(name string) (v string, ok bool)
	// Set sets the flag's setting from value as on a command line.
	Set(name, value string) error
}

// resumeMayChange are the flags of a run's settings a resume may change: the number of steps
// (which changes the learning-rate schedule from the resume point on, as `vkgrad train
// --resume --steps` does). The flags of the machine (--device, --threads), the logs and the run
// loop (--eval-every, --save-every, --stop-at, --run-dir) are not settings of the run and may
// always be given.
var resumeMayChange = []string{"steps"}

// carryOver takes the run loop's cadence from the resumed run's (saved), unless given again.
func carryOver(o, saved *RunOptions, given map[string]string) {
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

// checkGiven compares the flags given on the command line with a resumed run's settings
// (saved, bound to them): those a resume may change (resumeMayChange and mayChange) are set,
// the others must agree; the error names the flag and dir, the run to start afresh from.
func checkGiven(given map[string]string, saved Flags, mayChange []string, dir string) error {
	may := append(slices.Clone(resumeMayChange), mayChange...)
	for _, name := range slices.Sorted(maps.Keys(given)) {
		v, ok := saved.Value(name)
		if !ok {
			continue // a flag of the machine, the logs or the run loop
		}
		if slices.Contains(may, name) {
			if err := saved.Set(name, given[name]); err != nil {
				return fmt.Errorf("--%s: %w", name, err)
			}
			continue
		}
		if v != given[name] {
			return fmt.Errorf("--%s %s: the run was made with --%s %s, which cannot change when resuming (the continued run would no longer match an uninterrupted one); start a new run with --init %s instead",
				name, given[name], name, v, dir)
		}
	}
	return nil
}

// inheritTasks replaces the task flags the user did not set with those of the run that made
// --init (--init-task): its built-in tasks, or its dataset and verifiers, but never its reward
// program, which is a command and runs only when given on this command line.
func (r *Run) inheritTasks() error {
	if r.Init == "" {
		return fmt.Errorf("--init-task takes the task flags of --init's run, but no --init is given")
	}
	meta, cfgPath, err := ReadInitMeta(r.Init)
	if err != nil {
		return fmt.Errorf("--init-task: %w", err)
	}
	given := r.Line.Given
	_, rewardGiven := given["reward"]
	_, cmdGiven := given["reward-cmd"]
	if meta.Tasks.Data.RewardCmd != "" && !rewardGiven && !cmdGiven {
		return fmt.Errorf("--init-task: %s scores with a reward program (--reward-cmd), which is never taken from another run: give --reward or --reward-cmd", cfgPath)
	}
	t := &r.Tasks
	*t = meta.Tasks
	t.Data.RewardCmd, t.Data.Fingerprint, t.Data.EvalFingerprint = "", "", ""
	if t.Data.Path == "" { // the initial run used built-in tasks (or predates datasets)
		t.Data = DefaultDataset()
	}
	flags := r.Line.TaskFlags(t)
	for name, v := range given {
		_ = flags.Set(name, v) // only task flags are bound; others fail harmlessly
	}
	r.Log.Info().Str("prompts", t.Source()).Str("from", cfgPath).Msg("task options of the initial run (--init-task)")
	return nil
}

// FlagNamed rewrites a config error that starts with a setting's JSON name ("group_size 0:
// want >= 1") to name its flag instead ("--group-size 0: ..."), when defined has one.
func FlagNamed(err error, defined map[string]bool) error {
	msg := err.Error()
	name, rest, ok := strings.Cut(msg, " ")
	if !ok || !strings.Contains(name, "_") {
		return err
	}
	flag := strings.ReplaceAll(name, "_", "-")
	if !defined[flag] {
		return err
	}
	return fmt.Errorf("--%s %s", flag, rest)
}
