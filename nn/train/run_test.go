package train

import (
	"context"
	"errors"
	"testing"
)

// Run cancelled at step 4 and resumed from its directory ends with the parameters of an
// uninterrupted run, bit for bit.
func TestRunCancelAndResume(t *testing.T) {
	cfg := testConfig()
	straight := newTrainer(t, cfg)
	if err := straight.Run(context.Background(), RunOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	first := newTrainer(t, cfg)
	err := first.Run(ctx, RunOptions{Dir: dir, SaveEvery: 3, OnStep: func(step int, m map[string]float64) error {
		if step == 4 {
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) || first.Step != 4 {
		t.Fatalf("cancelled run: %v at step %d", err, first.Step)
	}
	second := newTrainer(t, cfg)
	if err := second.Run(context.Background(), RunOptions{Dir: dir, Resume: true}); err != nil {
		t.Fatal(err)
	}
	a, _ := straight.Model.ParamsToHost()
	b, _ := second.Model.ParamsToHost()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("parameter %d: %v resumed, %v straight", i, b[i], a[i])
		}
	}
}
