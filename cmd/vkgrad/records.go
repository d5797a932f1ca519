package main

import (
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/rundir"
)

// metricsLogger writes the run's metric lines, each with its time, to w.
func metricsLogger(w *rundir.MetricsWriter) zerolog.Logger {
	return zerolog.New(w).With().Timestamp().Logger()
}

// reportTo reads --report-to: which records a run keeps besides metrics.jsonl, which resuming
// needs and is always written.
func reportTo(v []string) (tensorboard bool, err error) {
	for _, r := range v {
		switch strings.TrimSpace(r) {
		case "tensorboard":
			tensorboard = true
		case "jsonl", "none":
		default:
			return false, fmt.Errorf("--report-to %q: want tensorboard, jsonl or none", r)
		}
	}
	return tensorboard, nil
}
