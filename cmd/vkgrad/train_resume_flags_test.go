package main

import (
	"fmt"
	"testing"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/trainrun"
)

// TestTrainResumeRefusesFixedFlags: each flag that decides a run's numbers, given to a resumed
// run with another value than the saved one, is refused with both values as the flag parser
// writes them.
func TestTrainResumeRefusesFixedFlags(t *testing.T) {
	values := map[string]string{"data": "/x", "ext": `.txt,.md`, "max-bytes": "7", "init": "/y", "batch": "3",
		"micro-batches": "2", "seq": "5", "lr": "0.0005", "min-lr": "1e-05", "warmup": "9", "weight-decay": "0.5",
		"decay-matrices-only": "true", "clip": "2.5", "seed": "11", "no-shuffle": "true", "val-fraction": "0.25",
		"val-batches": "3", "on-nonfinite": "stop", "max-skips": "4", "precision": "bf16"}
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
