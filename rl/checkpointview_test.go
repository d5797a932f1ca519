package rl

import (
	"slices"
	"testing"
)

// CheckpointView holds what Checkpoint does, and on the CPU its floats are the trainer's own
// memory rather than a second copy of the model, moments and reference.
func TestCheckpointViewIsCheckpoint(t *testing.T) {
	tr := toyGRPO(t, func(c *GRPOTrainerConfig) { c.GRPO.Beta = 0.04 })
	if _, err := tr.TrainStep(); err != nil {
		t.Fatal(err)
	}
	copied, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	view, err := tr.CheckpointView()
	if err != nil {
		t.Fatal(err)
	}
	for name, pair := range map[string][2][]float32{
		"params": {copied.Params, view.Params}, "adam_m": {copied.AdamM, view.AdamM}, "adam_v": {copied.AdamV, view.AdamV},
		"reference": {copied.Extra[ReferenceExtra], view.Extra[ReferenceExtra]},
	} {
		if len(pair[0]) == 0 || !slices.Equal(pair[0], pair[1]) {
			t.Errorf("%s: the view's %d floats differ from the copy's %d", name, len(pair[1]), len(pair[0]))
		}
	}
	own, ok := tr.Policy().Params().HostView()
	if !ok || &own[0] != &view.Params[0] || &copied.Params[0] == &own[0] {
		t.Errorf("on the CPU the view should share the policy's parameters and the copy not (host view %v)", ok)
	}
	if st := view.Meta[MetaTrainer]; st != "grpo" {
		t.Errorf("trainer kind %q", st)
	}
}
