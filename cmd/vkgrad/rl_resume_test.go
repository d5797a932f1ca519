package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/rl"
)

// rlCommon are the flags of the fast CLI runs below.
var rlCommon = []string{"--device", "cpu", "-q", "--eval-size", "4"}

// tinySFT makes a small sft run to start RL from.
func tinySFT(t *testing.T, dir string) string {
	t.Helper()
	sft := filepath.Join(dir, "sft")
	if out, err := runCLI(append([]string{"sft", "--run-dir", sft, "--steps", "3", "--batch", "4", "--max-digits", "1", "--min-digits", "1", "--held-out-fraction", "0.3"}, rlCommon...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return sft
}

// stepLines returns a run's metric lines of kind without the wall-clock fields.
func stepLines(t *testing.T, dir, kind string) []map[string]any {
	t.Helper()
	lines := metricLines(t, dir, kind)
	for _, l := range lines {
		for _, k := range []string{"time", "step_seconds", "rollout_seconds", "env/seconds", "env/wait_seconds"} {
			delete(l, k)
		}
	}
	return lines
}

// sameRun fails unless two run directories hold the same step metrics (every diagnostic, bit
// for bit), the same held-out evaluations and the same final checkpoint.
func sameRun(t *testing.T, kind, straight, resumed string, steps int) {
	t.Helper()
	for _, k := range []string{kind, "eval"} {
		a, b := stepLines(t, straight, k), stepLines(t, resumed, k)
		if len(a) != len(b) {
			t.Fatalf("%s: %d %q lines straight, %d resumed", kind, len(a), k, len(b))
		}
		for i := range a {
			if !reflect.DeepEqual(a[i], b[i]) {
				for key, v := range a[i] {
					if !reflect.DeepEqual(v, b[i][key]) {
						t.Errorf("%s %q line %d: %s is %v straight, %v resumed", kind, k, i, key, v, b[i][key])
					}
				}
				t.FailNow()
			}
		}
		if k == kind && len(a) != steps {
			t.Fatalf("%s: %d step lines, want %d", kind, len(a), steps)
		}
	}
	sa, err := checkpoint.Load(filepath.Join(straight, load.RunCheckpoint))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := checkpoint.Load(filepath.Join(resumed, load.RunCheckpoint))
	if err != nil {
		t.Fatal(err)
	}
	if sa.Step != steps || sb.Step != steps {
		t.Fatalf("%s: checkpoints at steps %d and %d, want %d", kind, sa.Step, sb.Step, steps)
	}
	bufs := map[string][2][]float32{"params": {sa.Params, sb.Params}, "adam_m": {sa.AdamM, sb.AdamM}, "adam_v": {sa.AdamV, sb.AdamV}}
	for k, v := range sa.Extra {
		bufs["extra "+k] = [2][]float32{v, sb.Extra[k]}
	}
	for name, ab := range bufs {
		if len(ab[0]) != len(ab[1]) || len(ab[0]) == 0 {
			t.Fatalf("%s: %s has %d and %d values", kind, name, len(ab[0]), len(ab[1]))
		}
		for i := range ab[0] {
			if math.Float32bits(ab[0][i]) != math.Float32bits(ab[1][i]) {
				t.Fatalf("%s: %s[%d] is %v straight, %v resumed", kind, name, i, ab[0][i], ab[1][i])
			}
		}
	}
	for _, k := range []string{rl.MetaState, rlrun.MetaSummary, rlrun.MetaEvalBefore} {
		if sa.Meta[k] != sb.Meta[k] {
			t.Fatalf("%s: meta %s differs:\n%s\n%s", kind, k, sa.Meta[k], sb.Meta[k])
		}
	}
}

// `sft|grpo|ppo --steps 4` equals `--stop-at 2` then `--resume`, through the command line and
// the run directory: every step's metrics, the evaluations, parameters, moments, reference,
// value head and summary, bit for bit. The resumed run appends to metrics.jsonl.
func TestRLResumeCLI(t *testing.T) {
	dir := t.TempDir()
	sft := tinySFT(t, dir)
	for _, c := range []struct {
		kind string
		args []string
	}{
		{"sft", []string{"--batch", "4", "--examples", "5", "--warmup", "1", "--max-digits", "1", "--min-digits", "1"}},
		{"grpo", []string{"--init", sft, "--prompts", "2", "--group-size", "3", "--beta", "0.1", "--mu", "2", "--top-k", "50", "--entropy-coef", "0.01",
			"--ref-sync-every", "1", "--ref-mix-alpha", "0.5", "--warmup", "1", "--eval-every", "3"}},
		{"ppo", []string{"--init", sft, "--prompts", "3", "--samples-per-prompt", "2", "--critic-warmup", "1", "--kl-control", "adaptive",
			"--kl-coef", "0.05", "--kl-target", "0.01", "--kl-horizon", "20", "--value-dropout", "0.1", "--value-init", "random", "--ref-sync-every", "2"}},
	} {
		t.Run(c.kind, func(t *testing.T) {
			straight, split := filepath.Join(dir, c.kind+"-straight"), filepath.Join(dir, c.kind+"-split")
			args := append(append([]string{c.kind, "--steps", "4"}, c.args...), rlCommon...)
			if out, err := runCLI(append(args, "--run-dir", straight)...); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			out, err := runCLI(append(args, "--run-dir", split, "--stop-at", "2")...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !strings.Contains(out, "stopped at step 2 of 4") || !strings.Contains(out, "vkgrad "+c.kind+" --resume "+split) {
				t.Fatalf("--stop-at output:\n%s", out)
			}
			if n := len(metricLines(t, split, c.kind)); n != 2 {
				t.Fatalf("%d step lines after --stop-at 2", n)
			}
			out, err = runCLI(append([]string{c.kind, "--resume", split}, rlCommon...)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			sameRun(t, c.kind, straight, split, 4)
			// The runs must learn something, or equal metrics would prove little.
			last := metricLines(t, straight, c.kind)[3]
			if g, _ := last["grad_norm"].(float64); g == 0 {
				t.Fatalf("%s: grad_norm 0 at the last step: %v", c.kind, last)
			}
			if kl, ok := last["kl"].(float64); c.kind != "sft" && (!ok || kl == 0) {
				t.Fatalf("%s: kl %v at the last step: the policy did not move from the reference", c.kind, last["kl"])
			}
		})
	}
}

// A crash after a periodic checkpoint loses nothing: the metric lines of the steps after it
// are dropped on --resume and those steps run again, identically.
func TestRLResumeAfterCrash(t *testing.T) {
	dir := t.TempDir()
	sft := tinySFT(t, dir)
	args := append([]string{"grpo", "--init", sft, "--steps", "5", "--prompts", "2", "--group-size", "3", "--beta", "0.1", "--entropy-coef", "0.01", "--save-every", "2"}, rlCommon...)
	straight, crashed := filepath.Join(dir, "straight"), filepath.Join(dir, "crashed")
	if out, err := runCLI(append(args, "--run-dir", straight)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	func() {
		afterStepHook = func(_ context.Context, step int) {
			if step == 3 {
				panic("simulated crash")
			}
		}
		defer func() {
			afterStepHook = nil
			if r := recover(); r != "simulated crash" {
				t.Fatalf("recovered %v", r)
			}
		}()
		runCLI(append(args, "--run-dir", crashed)...)
	}()
	st, err := checkpoint.Peek(filepath.Join(crashed, load.RunCheckpoint))
	if err != nil || st.Step != 2 {
		t.Fatalf("after the crash at step 3: checkpoint %v at step %v, want the periodic one at step 2", err, st)
	}
	if n := len(metricLines(t, crashed, "grpo")); n != 3 {
		t.Fatalf("%d step lines before the resume, want 3", n)
	}
	if out, err := runCLI(append([]string{"grpo", "--resume", crashed}, rlCommon...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sameRun(t, "grpo", straight, crashed, 5)
}

// Resuming refuses what would break continuity, naming the flag, field or file.
func TestRLResumeErrors(t *testing.T) {
	dir := t.TempDir()
	sft := tinySFT(t, dir)
	run := filepath.Join(dir, "grpo")
	if out, err := runCLI(append([]string{"grpo", "--init", sft, "--run-dir", run, "--steps", "3", "--stop-at", "1", "--prompts", "2", "--group-size", "3", "--beta", "0.1"}, rlCommon...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ckpt := filepath.Join(run, load.RunCheckpoint)
	raw, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	// A copy of the run whose checkpoint is cut short, one without config.json, and one whose
	// config.json says another group size than the checkpoint.
	copyRun := func(name string, edit func(dir string)) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{load.RunCheckpoint, "config.json", "metrics.jsonl"} {
			b, _ := os.ReadFile(filepath.Join(run, f))
			os.WriteFile(filepath.Join(d, f), b, 0o644)
		}
		edit(d)
		return d
	}
	torn := copyRun("torn", func(d string) { os.WriteFile(filepath.Join(d, load.RunCheckpoint), raw[:len(raw)-100], 0o644) })
	noConfig := copyRun("noconfig", func(d string) { os.Remove(filepath.Join(d, "config.json")) })
	edited := copyRun("edited", func(d string) {
		b, _ := os.ReadFile(filepath.Join(d, "config.json"))
		os.WriteFile(filepath.Join(d, "config.json"), []byte(strings.Replace(string(b), `"group_size": 3`, `"group_size": 4`, 1)), 0o644)
	})
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"grpo", "--resume", run, "--group-size", "4"}, []string{"--group-size 4", "--group-size 3", "cannot change"}},
		{[]string{"grpo", "--resume", run, "--beta", "0.2"}, []string{"--beta"}},
		{[]string{"grpo", "--resume", run, "--max-digits", "3"}, []string{"--max-digits"}},
		{[]string{"grpo", "--resume", run, "--init", dir}, []string{"--init"}},
		{[]string{"grpo", "--resume", run, "--steps", "1"}, []string{"--steps 1", "taken 1"}},
		{[]string{"ppo", "--resume", run}, []string{"grpo run", "vkgrad grpo --resume"}},
		{[]string{"grpo", "--resume", sft}, []string{"sft run"}},
		{[]string{"grpo", "--resume", filepath.Join(dir, "nope")}, []string{"nope"}},
		{[]string{"grpo", "--resume", torn}, []string{filepath.Join(torn, load.RunCheckpoint)}},
		{[]string{"grpo", "--resume", noConfig}, []string{"config.json"}},
		{[]string{"grpo", "--resume", edited}, []string{filepath.Join(edited, load.RunCheckpoint), "grpo.group_size", "3", "4"}},
	} {
		out, err := runCLI(append(c.args, "--device", "cpu", "-q")...)
		if err == nil {
			t.Errorf("%v: succeeded\n%s", c.args, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not mention %q", c.args, err, w)
			}
		}
	}
	// The same value as the run's, and a new number of steps, are accepted.
	if out, err := runCLI(append([]string{"grpo", "--resume", run, "--group-size", "3", "--steps", "2"}, rlCommon...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// A checkpoint written without trainer state (a model only) cannot be resumed.
	st, err := checkpoint.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old")
	os.MkdirAll(old, 0o755)
	b, _ := os.ReadFile(filepath.Join(run, "config.json"))
	os.WriteFile(filepath.Join(old, "config.json"), b, 0o644)
	if err := checkpoint.Save(filepath.Join(old, load.RunCheckpoint), &checkpoint.State{Config: st.Config, Step: 1, Params: st.Params}); err != nil {
		t.Fatal(err)
	}
	_, err = runCLI("grpo", "--resume", old, "--device", "cpu", "-q")
	if err == nil || !strings.Contains(err.Error(), "no grpo trainer state") || !strings.Contains(err.Error(), "--init") {
		t.Errorf("model-only checkpoint: %v", err)
	}
}
