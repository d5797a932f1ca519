package main

import "context"

// afterStepHook, when set (by tests), runs after each training step with the run's interrupt
// context.
var afterStepHook func(ctx context.Context, step int)

// testStepHook is the commands' OnStep for the run loop: it calls afterStepHook.
func testStepHook(ctx context.Context) func(int, map[string]float64) error {
	return func(step int, _ map[string]float64) error {
		if afterStepHook != nil {
			afterStepHook(ctx, step)
		}
		return nil
	}
}
