package main

import (
	"fmt"
	"testing"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/trainrun"
)

// trainFixedFlagValues are the flags a resumed train run keeps, each with a value other than
// its default.
var trainFixedFlagValues = map[string]string{"data": "/x", "ext": `.txt,.md`, "max-bytes": "7", "init": "/y", "batch": "3",
	"micro-batches": "2", "seq": "5", "lr": "0.0005", "min-lr": "1e-05", "warmup": "9", "weight-decay": "0.5",
	"decay-matrices-only": "true", "clip": "2.5", "seed": "11", "no-shuffle": "true", "val-fraction": "0.25",
	"val-batches": "3", "on-nonfinite": "stop", "max-skips": "4", "precision": "bf16"}

// TestTrainResumeRefusesFixedFlags: each flag that decides a run's numbers, given to a resumed
// run with another value than the saved one, is refused with both values as the flag parser
// writes them.
func TestTrainResumeRefusesFixedFlags(t *testing.T) {
	values := trainFixedFlagValues
	savedFlags := pflag.NewFlagSet("", pflag.ContinueOnError)
	saved := newTrainFlags(savedFlags).cfg
	for name, v := range values {
		fs := pflag.NewFlagSet("", pflag.ContinueOnError)
		f := newTrainFlags(fs)
		if err := fs.Parse([]string{"--" + name, v}); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("--%s %s: this run was saved with --%s %s, which a resumed run keeps",
			name, fs.Lookup(name).Value, name, savedFlags.Lookup(name).Value)
		if err := f.cfg.Adopt(saved.Train, trainrun.Meta{Data: saved.Data, Init: saved.Init}, 0); err == nil || err.Error() != want {
			t.Errorf("--%s %s: %v, want %q", name, v, err, want)
		}
	}
}

// Every flag of vkgrad train is either one a resume refuses to change (the test above gives
// each a value) or one it lets change, listed here: a flag added to the command without a
// decision fails.
func TestTrainResumeClassifiesEveryFlag(t *testing.T) {
	fixed := trainFixedFlagValues
	free := map[string]bool{
		// where and how the run happens, not what it computes
		"device": true, "threads": true, "distributed": true, "log-json": true, "quiet": true,
		"resume": true, "run-dir": true, "overwrite": true, "cache-dir": true, "report-to": true, "dry-run": true,
		// the shape comes from the checkpoint; a model or dataset revision only names where --init came from
		"preset": true, "revision": true,
		// what Adopt carries over or extends
		"steps": true, "stop-at": true, "recompute": true, "val-every": true, "save-every": true,
		"sample-tokens": true, "sample-prompt": true,
	}
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	newTrainFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		_, isFixed := fixed[f.Name]
		if isFixed == free[f.Name] {
			t.Errorf("--%s: fixed %v, free to change on resume %v; say which (TestTrainResumeRefusesFixedFlags or this test's list)", f.Name, isFixed, free[f.Name])
		}
	})
}
