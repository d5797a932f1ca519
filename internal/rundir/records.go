package rundir

import (
	"fmt"
	"strings"

	"github.com/rs/zerolog"
)

// ReportTo reads --report-to: which records a run keeps besides the metrics file, which
// resuming needs and is always written. It reports whether TensorBoard's event files are asked
// for ("tensorboard"); "jsonl" and "none" add nothing.
func ReportTo(values []string) (tensorboard bool, err error) {
	for _, v := range values {
		switch strings.TrimSpace(v) {
		case "tensorboard":
			tensorboard = true
		case "jsonl", "none":
		default:
			return false, fmt.Errorf("--report-to %q: want tensorboard, jsonl or none", v)
		}
	}
	return tensorboard, nil
}

// Logger writes the run's metric lines, each with its time, to w.
func (w *MetricsWriter) Logger() zerolog.Logger {
	return zerolog.New(w).With().Timestamp().Logger()
}
