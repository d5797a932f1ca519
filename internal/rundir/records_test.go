package rundir

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestReportTo(t *testing.T) {
	for _, c := range []struct {
		values      []string
		tensorboard bool
		err         string
	}{
		{values: []string{"jsonl", "tensorboard"}, tensorboard: true},
		{values: []string{" tensorboard "}, tensorboard: true},
		{values: []string{"jsonl"}},
		{values: []string{"none"}},
		{values: nil},
		{values: []string{"jsonl", "wandb"}, err: `--report-to "wandb": want tensorboard, jsonl or none`},
	} {
		tb, err := ReportTo(c.values)
		switch {
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("ReportTo(%q): error %v, want %q", c.values, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("ReportTo(%q): %v", c.values, err)
		case tb != c.tensorboard:
			t.Errorf("ReportTo(%q) = %v, want %v", c.values, tb, c.tensorboard)
		}
	}
}

// TestLoggerWritesTimedLines: a metrics line written through Logger carries its fields and a
// time, in one line of the metrics file.
func TestLoggerWritesTimedLines(t *testing.T) {
	dir := t.TempDir()
	w, _, err := OpenMetrics(dir, false, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	log := w.Logger()
	log.Log().Int("step", 4).Float64("loss", 2.5).Send()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, Metrics))
	if err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal(raw, &line); err != nil {
		t.Fatalf("metrics file %q: %v", raw, err)
	}
	if line["step"] != 4.0 || line["loss"] != 2.5 || line["time"] == nil || len(line) != 3 {
		t.Errorf("metrics line %q: want step 4, loss 2.5 and a time", raw)
	}
	if raw[len(raw)-1] != '\n' {
		t.Errorf("metrics line %q does not end its line", raw)
	}
}
