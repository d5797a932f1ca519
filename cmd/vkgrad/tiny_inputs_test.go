package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// gsmRow is GSM8K's layout on the Hugging Face Hub.
type gsmRow struct {
	Question string `parquet:"question"`
	Answer   string `parquet:"answer"`
}

// Every command given the smallest inputs either runs or says what to change: datasets of 1,
// 2 and 8 examples (one prompt cannot be held out: the run trains without the held-out
// accuracy and says so), GSM8K's Parquet layout with the numeric verifier, an empty
// --eval-dataset, and a one-line text file for train and eval.
func TestTinyInputs(t *testing.T) {
	dir := t.TempDir()
	sft := tinySFT(t, dir)
	files := map[string]string{}
	for _, n := range []int{1, 2, 8} {
		p := filepath.Join(dir, string(rune('0'+n))+".jsonl")
		writeSums(t, p, n, nil)
		files[filepath.Base(p)] = p
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := write("empty.jsonl", "\n")
	oneLine := write("one.txt", "hello world\n")
	var buf bytes.Buffer
	if err := parquet.Write(&buf, []gsmRow{{"Tom has 3 apples and gets 4. How many?", "3 + 4 = 7\n#### 7"}, {"Ann has 5 pens, loses 2. How many?", "5 - 2 = 3\n#### 3"}}); err != nil {
		t.Fatal(err)
	}
	gsm := write("gsm8k.parquet", buf.String())
	rl := func(cmd string, extra ...string) []string {
		args := append([]string{cmd, "--init", sft, "--steps", "1", "--eval-samples", "0"}, extra...)
		return append(args, rlCommon...)
	}
	for _, c := range []struct {
		name string
		args []string
		err  string // "" for a run that succeeds
		log  string // a line the run must log
	}{
		{"sft 1 example", rl("sft", "--dataset", files["1.jsonl"]), "", "one distinct prompt is too few to hold one out"},
		{"grpo 2 examples", rl("grpo", "--dataset", files["2.jsonl"], "--prompts", "2", "--group-size", "2"), "", ""},
		{"ppo 8 examples", rl("ppo", "--dataset", files["8.jsonl"], "--prompts", "2", "--critic-warmup", "0"), "", ""},
		{"grpo gsm8k parquet", rl("grpo", "--dataset", gsm, "--dataset-field", "prompt=question", "--reward", "numeric", "--prompts", "2", "--group-size", "2"), "", ""},
		{"empty eval dataset", rl("grpo", "--dataset", files["8.jsonl"], "--eval-dataset", empty), "--eval-dataset: " + empty + ": no examples", ""},
		{"train one line", []string{"train", "--data", oneLine, "--preset", "gpt2-micro", "--steps", "1", "--device", "cpu", "-q", "--cache-dir", dir},
			"use more data, or a smaller batch or sequence length", ""},
		{"eval one line", []string{"eval", "--model", sft, "--data", oneLine, "--device", "cpu", "-q", "--cache-dir", dir},
			"use more data, or a smaller batch or sequence length", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(c.args, "--run-dir", filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")))
			if c.args[0] == "eval" {
				args = c.args
			}
			var out string
			var err error
			logs := captureStderr(t, func() { out, err = runCLI(args...) })
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("%v\n%s\n%s", err, out, logs)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want %q\n%s", err, c.err, out)
			case c.log != "" && strings.Count(logs+out, c.log) != 1:
				t.Errorf("the run should say once %q:\n%s\n%s", c.log, logs, out)
			}
		})
	}
}
