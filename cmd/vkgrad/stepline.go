package main

import (
	"github.com/rs/zerolog"
	"github.com/vkgrad/vkgrad/nn/train"
)

// stepLine adds a step's numbers to its metrics line under the names train and sft lines share
// (float32 values written as float32), and, when the run spans ranks, what the step sent and
// its time in MPI.
func stepLine(ev *zerolog.Event, st train.StepStats, ranks bool) *zerolog.Event {
	ev = ev.Int("step", st.Step).Float32("loss", st.Loss).Float32("learning_rate", st.LR).Float32("grad_norm", st.GradNorm).
		Int("tokens", st.Tokens).Float64("step_seconds", st.Seconds)
	if ranks {
		ev = ev.Int64("comm_bytes", st.CommBytes).Float64("comm_seconds", st.CommSeconds)
	}
	if st.LossScale > 0 {
		ev = ev.Float32("loss_scale", st.LossScale)
	}
	return ev
}
