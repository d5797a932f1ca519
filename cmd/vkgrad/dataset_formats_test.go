package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// sumRow is a line of writeSums as a Parquet row.
type sumRow struct {
	Prompt string `parquet:"prompt"`
	Answer string `parquet:"answer"`
}

// writeSumsParquet writes writeSums's n sums as a Parquet file.
func writeSumsParquet(t *testing.T, path string, n int) {
	t.Helper()
	rows := make([]sumRow, n)
	for i := 1; i <= n; i++ {
		rows[i-1] = sumRow{fmt.Sprintf("%d + %d =", i%7, i%5), fmt.Sprintf(" %d", i%7+i%5)}
	}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A Parquet copy of a JSONL dataset gives the same sft and grpo runs, bit for bit: the same
// prompts drawn, the same held-out set, the same checkpoint.
func TestParquetDatasetRunsLikeJSONL(t *testing.T) {
	dir := t.TempDir()
	sft := tinySFT(t, dir)
	jsonl, pq := filepath.Join(dir, "sums.jsonl"), filepath.Join(dir, "sums.parquet")
	writeSums(t, jsonl, 40, nil)
	writeSumsParquet(t, pq, 40)
	for _, c := range []struct {
		kind string
		args []string
	}{
		{"sft", []string{"--batch", "2", "--stop-at-accuracy", "0"}},
		{"grpo", []string{"--prompts", "2", "--group-size", "2", "--reward", "numeric"}},
	} {
		var runs []string
		for _, data := range []string{jsonl, pq} {
			runDir := filepath.Join(dir, c.kind+"-"+filepath.Ext(data)[1:])
			args := append([]string{c.kind, "--init", sft, "--dataset", data, "--run-dir", runDir, "--steps", "2", "--eval-samples", "0"}, c.args...)
			if out, err := runCLI(append(args, rlCommon...)...); err != nil {
				t.Fatalf("%s from %s: %v\n%s", c.kind, data, err, out)
			}
			runs = append(runs, runDir)
		}
		sameRun(t, c.kind, runs[0], runs[1], 2)
	}
}
