package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
)

// TestRewardProgramOncePerCompletionOnTwoRanks: `mpirun -np 2 vkgrad grpo --reward-cmd P` runs
// P once per completion over both ranks (each rank's P scores the groups that rank sampled and
// its share of the held-out answers), and writes the checkpoint, reward metrics and held-out
// evaluations of `-np 1`, with each installed MPI.
func TestRewardProgramOncePerCompletionOnTwoRanks(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sft := tinySFT(t, dir)
	data := filepath.Join(dir, "sums.jsonl")
	var lines []string
	for i := range 8 {
		lines = append(lines, fmt.Sprintf(`{"prompt": "%d+%d=", "answer": "%d"}`, i%5, i%3, i%5+i%3))
	}
	if err := os.WriteFile(data, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Held out: 4 problems, each answered greedily and sampled once, before and after.
	const steps, prompts, group, heldOut, evals = 3, 3, 4, 4, 2 * 4 * 2
	run := func(l testutil.Launcher, np int, name string) (scored []string, runDir string) {
		runDir, log := filepath.Join(dir, name), filepath.Join(dir, name+".scored")
		args := []string{"grpo", "--init", sft, "--dataset", data, "--reward-cmd", "VKGRAD_TEST_AS_REWARD=1 VKGRAD_TEST_REWARD_LOG=" + log + " " + exe,
			"--held-out-share", "0.5", "--eval-size", fmt.Sprint(heldOut), "--eval-samples", "1", "--steps", fmt.Sprint(steps), "--prompts", fmt.Sprint(prompts), "--group-size", fmt.Sprint(group), "--micro-batch", "4", "--max-new-tokens", "4",
			"--lr", "1e-2", "--device", "cpu", "-q", "--run-dir", runDir}
		if out, err := l.Command(np, []string{"VKGRAD_TEST_AS_CLI=1"}, exe, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s -np %d: %v\n%s", l.Name, np, err, out)
		}
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		scored = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(scored) != steps*prompts*group+evals {
			t.Errorf("%s -np %d: the reward program scored %d completions, want %d (%d steps of %d, %d held-out answers)", l.Name, np, len(scored),
				steps*prompts*group+evals, steps, prompts*group, evals)
		}
		slices.Sort(scored)
		return scored, runDir
	}
	for _, l := range testutil.MPILaunchers(t) {
		wantScored, one := run(l, 1, l.Name+"-1")
		gotScored, two := run(l, 2, l.Name+"-2")
		if !slices.Equal(gotScored, wantScored) {
			t.Errorf("%s -np 2 scored other completions than -np 1:\n%q\nwant\n%q", l.Name, gotScored, wantScored)
		}
		want, _ := os.ReadFile(filepath.Join(one, "checkpoint.safetensors"))
		if got, err := os.ReadFile(filepath.Join(two, "checkpoint.safetensors")); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s -np 2: checkpoint differs from -np 1's (%v)", l.Name, err)
		}
		if a, b := stepLines(t, one, "eval"), stepLines(t, two, "eval"); len(a) != 2 || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: held-out evaluations %v on 2 ranks, %v on 1", l.Name, b, a)
		}
		oneLines, twoLines := metricLines(t, one, "grpo"), metricLines(t, two, "grpo")
		if len(oneLines) != steps || len(twoLines) != steps {
			t.Fatalf("%s: %d and %d step lines, want %d", l.Name, len(oneLines), len(twoLines), steps)
		}
		for s := range steps {
			for _, k := range []string{"reward", "reward_std", "rewards/cmd/mean", "rewards/cmd/std", "loss"} {
				if oneLines[s][k] != twoLines[s][k] || oneLines[s][k] == nil {
					t.Errorf("%s step %d: %s %v on 2 ranks, %v on 1", l.Name, s+1, k, twoLines[s][k], oneLines[s][k])
				}
			}
		}
	}
}
