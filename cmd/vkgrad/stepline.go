package main

import (
	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/trainrun"
	"github.com/vkgrad/vkgrad/nn/train"
)

// stepLine is trainrun.StepLine: sft's step lines share train's names.
func stepLine(ev *zerolog.Event, st train.StepStats, ranks bool) *zerolog.Event {
	return trainrun.StepLine(ev, st, ranks)
}
