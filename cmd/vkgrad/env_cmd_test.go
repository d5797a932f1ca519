package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/episode"
)

// envSFT makes a small GPT-2 sft run whose context holds a few turns.
func envSFT(t *testing.T, dir string) string {
	t.Helper()
	sft := filepath.Join(dir, "sft")
	if out, err := runCLI("sft", "--run-dir", sft, "--steps", "1", "--batch", "2", "--max-digits", "1", "--min-digits", "1",
		"--held-out-fraction", "0.3", "--context", "256", "--device", "cpu", "-q", "--eval-size", "2"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return sft
}

// envArgs are the flags of a short episode run.
var envArgs = []string{"--steps", "2", "--prompts", "2", "--group-size", "2", "--max-new-tokens", "6", "--max-turns", "3",
	"--max-episode-tokens", "200", "--eval-size", "2", "--device", "cpu", "-q"}

// loggedCompletion is a line of completions.jsonl.
type loggedCompletion struct {
	Step int `json:"step"`
	rl.Completion
}

func readCompletions(t *testing.T, dir string) []loggedCompletion {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, rundir.Completions))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []loggedCompletion
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c loggedCompletion
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		out = append(out, c)
	}
	return out
}

// grpo --env runs episodes with no dataset: the environment opens each one, the episode
// metrics are logged, the environment's replies are logged untrained, the held-out accuracy
// is measured in the environment on the return alone (a length penalty in --reward counts in
// training only), and config.json keeps the environment and its limits.
func TestGRPOInEnvironments(t *testing.T) {
	dir := t.TempDir()
	sft := envSFT(t, dir)
	for _, c := range []struct {
		env                string
		turns, done        float64
		environmentReplies bool
		reward             []string
	}{
		{"guess", 3, 0, true, []string{"--reward", "env:1,length:1", "--target-length", "2"}}, // never guessed: every episode runs its 3 turns
		{"calculator", 1, 1, false, nil}, // an answer without a tool call ends the episode
	} {
		t.Run(c.env, func(t *testing.T) {
			run := filepath.Join(dir, c.env)
			args := append([]string{"grpo", "--init", sft, "--env", c.env, "--run-dir", run, "--log-completions", "4"}, c.reward...)
			out, err := runCLI(append(args, envArgs...)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			lines := metricLines(t, run, "grpo")
			if len(lines) != 2 {
				t.Fatalf("%d step lines, want 2", len(lines))
			}
			for _, l := range lines {
				if l["turns/mean"] != c.turns || l["episode/stop_reason/done"] != c.done || l["episode/stop_reason/env_error"] != 0.0 {
					t.Errorf("turns/mean %v, stop_reason/done %v, env_error %v; want %v, %v, 0", l["turns/mean"], l["episode/stop_reason/done"],
						l["episode/stop_reason/env_error"], c.turns, c.done)
				}
				if _, ok := l["rewards/env/mean"]; !ok {
					t.Errorf("no rewards/env/mean: the env reward is not the default")
				}
			}
			cs := readCompletions(t, run)
			if len(cs) != 8 {
				t.Fatalf("%d logged completions, want 4 a step", len(cs))
			}
			replies := 0
			for _, comp := range cs {
				if len(comp.Turns) == 0 || comp.StopReason == "" {
					t.Fatalf("completion %+v: no episode", comp)
				}
				for _, s := range comp.Turns {
					if s.Trained != (s.Role == "assistant") || len(s.Tokens) == 0 {
						t.Errorf("segment %+v: only the assistant's turns train", s)
					}
					if s.Role == "environment" {
						replies++
					}
				}
			}
			if (replies > 0) != c.environmentReplies {
				t.Errorf("%d environment replies logged", replies)
			}
			evals := metricLines(t, run, "eval")
			if len(evals) != 2 || evals[0]["n"] != 2.0 || evals[0]["mean_reward"] != 0.0 || evals[0]["accuracy/"+c.env] != 0.0 {
				t.Errorf("eval lines %v: want before and after, on 2 episodes that returned 0", evals)
			}
			if c.reward != nil && !(lines[0]["reward"].(float64) < 0) {
				t.Errorf("step reward %v: want the length penalty in training", lines[0]["reward"])
			}
			var meta rlrun.RunMeta
			raw, _ := os.ReadFile(filepath.Join(run, "config.json"))
			if err := json.Unmarshal(raw, &meta); err != nil {
				t.Fatal(err)
			}
			if meta.Env == nil || meta.Env.Name != c.env || meta.Env.Limits.MaxTurns != 3 || meta.Env.Limits.MaxEpisodeTokens != 200 {
				t.Errorf("config.json env %+v", meta.Env)
			}
		})
	}
}

// A ppo run in an environment trains with the value head on episodes.
func TestPPOInEnvironment(t *testing.T) {
	dir := t.TempDir()
	sft := envSFT(t, dir)
	run := filepath.Join(dir, "ppo")
	if out, err := runCLI(append([]string{"ppo", "--init", sft, "--env", "guess", "--run-dir", run}, envArgs...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := metricLines(t, run, "ppo")
	if len(lines) != 2 {
		t.Fatalf("%d step lines, want 2", len(lines))
	}
	for _, k := range []string{"turns/mean", "episode/trained_token_fraction", "vf_loss"} {
		if _, ok := lines[1][k]; !ok {
			t.Errorf("ppo metrics lack %q", k)
		}
	}
	if f := lines[1]["episode/trained_token_fraction"].(float64); f <= 0 || f >= 1 {
		t.Errorf("trained token fraction %v: want the sampled tokens only", f)
	}
}

// An environment run stopped and resumed equals the run straight through, bit for bit; the
// environment and its limits come back from config.json.
func TestEnvironmentResumeCLI(t *testing.T) {
	dir := t.TempDir()
	sft := envSFT(t, dir)
	straight, split := filepath.Join(dir, "straight"), filepath.Join(dir, "split")
	args := []string{"grpo", "--init", sft, "--env", "guess", "--steps", "3", "--prompts", "2", "--group-size", "3", "--max-new-tokens", "6",
		"--max-turns", "2", "--max-episode-tokens", "120", "--reward", "env:1,length:0.5", "--target-length", "30", "--eval-size", "2", "--device", "cpu", "-q"}
	if out, err := runCLI(append(args, "--run-dir", straight)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := runCLI(append(args, "--run-dir", split, "--stop-at", "1")...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := runCLI("grpo", "--resume", split, "--max-turns", "3", "--device", "cpu", "-q"); err == nil || !strings.Contains(err.Error(), "--max-turns 3: the run was made with --max-turns 2") {
		t.Fatalf("a resume changing --max-turns: %v\n%s", err, out)
	}
	if out, err := runCLI("grpo", "--resume", split, "--device", "cpu", "-q"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sameRun(t, "grpo", straight, split, 3)
	last := metricLines(t, straight, "grpo")[2]
	if g, _ := last["grad_norm"].(float64); g == 0 || last["turns/mean"] != 2.0 {
		t.Fatalf("grad_norm %v, turns/mean %v at the last step: want a step that learns, on 2-turn episodes", last["grad_norm"], last["turns/mean"])
	}
}

// vkgrad rollout prints episodes as text and as JSON lines; the counts add up and only the
// sampled tokens would train.
func TestRolloutPrintsEpisodes(t *testing.T) {
	dir := t.TempDir()
	sft := envSFT(t, dir)
	args := []string{"rollout", "--model", sft, "--env", "guess", "--count", "2", "--max-new-tokens", "4", "--max-turns", "2", "--device", "cpu", "-q"}
	out, err := runCLI(args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"=== episode 1 of 2: return 0, stop max_turns ===", "=== episode 2 of 2", "--- prompt (28 tokens, not trained)\nI am thinking of a whole number from 1 to 100.",
		"--- assistant turn 2 (4 tokens, reward 0)", "--- environment (", "counts: prompt 28, sampled 8, environment "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = runCLI(append(args, "--json")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d JSON lines, want 2:\n%s", len(lines), out)
	}
	for _, line := range lines {
		var ep rolloutEpisode
		if err := json.Unmarshal([]byte(line), &ep); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		sampled, env := 0, 0
		for _, s := range ep.Segments {
			for _, tr := range s.Trained {
				if tr != (s.Role == "assistant") {
					t.Errorf("segment %+v: only the assistant's tokens train", s)
				}
			}
			if s.Role == "assistant" {
				sampled += len(s.Tokens)
			} else {
				env += len(s.Tokens)
			}
		}
		c := ep.Counts
		if c.Prompt != 28 || c.Sampled != sampled || c.Trained != sampled || c.Environment != env || env == 0 || c.Forced != 0 {
			t.Errorf("counts %+v; want prompt 28, sampled and trained %d, environment %d", c, sampled, env)
		}
	}
}

// Rollout of a Qwen3 chat model renders the episode in its chat template: the template's
// special tokens are read as their ids, and a turn ends with <|im_end|>, the model's EOS.
func TestRolloutChatTemplate(t *testing.T) {
	model := chatModel(t)
	out, err := runCLI("rollout", "--model", model, "--env", "guess", "--count", "1", "--max-new-tokens", "3", "--max-turns", "2", "--temperature", "0", "--json", "--device", "cpu", "-q")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var ep rolloutEpisode
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &ep); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	const imStart, imEnd = 151644, 151645
	if !strings.HasPrefix(ep.Prompt, "<|im_start|>user\nI am thinking") || ep.PromptTokens[0] != imStart {
		t.Errorf("prompt %q (tokens %v): want the chat template's, <|im_start|> as one token", ep.Prompt, ep.PromptTokens[:3])
	}
	if len(ep.Segments) < 2 || ep.Segments[1].Role != "environment" {
		t.Fatalf("segments %+v: want a turn and the environment's reply", ep.Segments)
	}
	reply := ep.Segments[1]
	if reply.Tokens[0] != imEnd || !strings.Contains(reply.Text, "<|im_start|>user\n") || !strings.HasSuffix(reply.Text, "<|im_start|>assistant\n") {
		t.Errorf("environment reply %q (tokens %v): want <|im_end|> closing the cut turn, then the user's turn", reply.Text, reply.Tokens)
	}
}

// A bad environment flag is refused before the run starts, naming the flag, and leaves no run
// directory.
func TestEnvironmentFlagErrors(t *testing.T) {
	dir := t.TempDir()
	sft := envSFT(t, dir)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"grpo", "--reward", "env"}, []string{"--reward", "--env NAME"}},
		{[]string{"grpo", "--env", "guess", "--tool-output-truncate", "both"}, []string{`--tool-output-truncate "both": want left, right or middle`}},
		{[]string{"ppo", "--env", "guess", "--max-turns", "0"}, []string{"--max-turns 0: want >= 1"}},
		{[]string{"grpo", "--max-turns", "3"}, []string{"--max-turns", "give --env NAME"}},
		{[]string{"grpo", "--env", "chess"}, []string{"--env", "calculator, guess"}},
		{[]string{"grpo", "--env", "guess", "--reward", "exact"}, []string{"--reward", "answer"}},
		{[]string{"rollout", "--model", sft}, []string{"--env NAME"}},
		{[]string{"rollout", "--model", sft, "--env", "guess", "--rejoin-steps", "0"}, []string{"--rejoin-steps 0"}},
	} {
		run := filepath.Join(dir, "run")
		args := append(c.args, "--device", "cpu", "-q")
		if c.args[0] != "rollout" {
			args = append(args, "--init", sft, "--run-dir", run)
		}
		out, err := runCLI(args...)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %v, want it to name %q\n%s", c.args, err, w, out)
			}
		}
		if _, serr := os.Stat(run); serr == nil {
			t.Errorf("%v left %s behind", c.args, run)
			os.RemoveAll(run)
		}
	}
}

// --dry-run sizes an environment run for episodes that fill their context, not for one turn.
func TestEnvironmentDryRun(t *testing.T) {
	sft := envSFT(t, t.TempDir())
	out, err := runCLI("grpo", "--init", sft, "--env", "guess", "--max-episode-tokens", "200", "--max-new-tokens", "8", "--dry-run", "--device", "cpu", "-q")
	if err != nil || !strings.Contains(out, "rows of T=199,") {
		t.Errorf("dry run: %v\n%s", err, out)
	}
}

// A model whose chat template ends turns with a token its tokenizer lacks (a Qwen3 shape over
// GPT-2's tokenizer) is refused for episodes, saying which text and which EOS disagree.
func TestEndOfTurnMustBeTheEOS(t *testing.T) {
	fam, err := rlrun.OpenFamily("", "qwen3")
	if err != nil {
		t.Fatal(err)
	}
	e := rlrun.Env{Name: "guess", Limits: rlrun.DefaultEnv().Limits}
	_, _, err = e.Environment(fam)
	if err == nil || !strings.Contains(err.Error(), `"<|im_end|>"`) || !strings.Contains(err.Error(), "end-of-sequence token is 50256") {
		t.Errorf("qwen3 template over GPT-2's tokenizer: %v", err)
	}
	fam, err = rlrun.OpenFamily("", "")
	if err != nil {
		t.Fatal(err)
	}
	env, _, err := e.Environment(fam)
	if err != nil || env.Render.EndOfTurn() != "<|endoftext|>" {
		t.Errorf("GPT-2: %v, %v", env, err)
	}
}

// `mpirun -np 2 vkgrad grpo --env guess` spreads the groups' episodes over the ranks and
// trains the checkpoint of `-np 1`, bit for bit, with each installed MPI.
func TestEnvironmentOnTwoRanks(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sft := envSFT(t, dir)
	args := func(runDir string) []string {
		return []string{"grpo", "--init", sft, "--env", "guess", "--steps", "2", "--prompts", "2", "--group-size", "3", "--max-new-tokens", "6",
			"--max-turns", "2", "--max-episode-tokens", "120", "--reward", "env:1,length:0.5", "--target-length", "30", "--micro-batch", "3",
			"--eval-size", "2", "--lr", "1e-2", "--device", "cpu", "-q", "--run-dir", runDir}
	}
	for _, l := range testutil.MPILaunchers(t) {
		one := filepath.Join(dir, l.Name+"-1")
		if out, err := l.Command(1, []string{"VKGRAD_TEST_AS_CLI=1"}, exe, args(one)...).CombinedOutput(); err != nil {
			t.Fatalf("%s -np 1: %v\n%s", l.Name, err, out)
		}
		for _, line := range metricLines(t, one, "grpo") {
			if !(line["grad_norm"].(float64) > 0) || line["turns/mean"] != 2.0 {
				t.Fatalf("%s -np 1: want steps that learn, on 2-turn episodes: %v", l.Name, line)
			}
		}
		want, err := os.ReadFile(filepath.Join(one, "checkpoint.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		two := filepath.Join(dir, l.Name+"-2")
		sameCheckpointOnTwoRanks(t, l, two, args(two), want)
		if a, b := stepLines(t, one, "eval"), stepLines(t, two, "eval"); len(a) != 2 || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: held-out evaluations %v on 2 ranks, %v on 1", l.Name, b, a)
		}
	}
}

// With --mask-tool-syntax, rollout marks the fixed tokens of a tool call forced: sampled but
// not trained; the model's choices (the tool's name, the argument) still train.
func TestRolloutMarksForcedToolSyntax(t *testing.T) {
	fam, err := rlrun.OpenFamily("", "")
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := (&rlrun.Env{Name: "calculator", Limits: rlrun.DefaultEnv().Limits}).Environment(fam)
	if err != nil {
		t.Fatal(err)
	}
	call := fam.Special.Encode("<tool_call>\n{\"name\": \"calculate\", \"arguments\": {\"expression\": \"12*34\"}}\n</tool_call>" + rl.EOSText)
	reply := fam.Special.Encode("408\n")
	toks := append(append([]int32{}, call...), reply...)
	sampled := make([]bool, len(toks))
	for i := range call {
		sampled[i] = true
	}
	ep := &episode.Episode{Prompt: fam.Special.Encode("What is 12*34?"), Tokens: toks, Sampled: sampled, StopReason: episode.StopMaxTurns,
		Turns: []episode.Turn{{Start: 0, End: len(call), ToolCalls: 1}}, EnvTokens: len(reply)}
	re, err := describeEpisode(1, ep, e, true)
	if err != nil {
		t.Fatal(err)
	}
	c := re.Counts
	if c.Sampled != len(call) || c.Forced == 0 || c.Trained == 0 || c.Trained+c.Forced != c.Sampled || c.Environment != len(reply) {
		t.Fatalf("counts %+v for a call of %d tokens and a reply of %d", c, len(call), len(reply))
	}
	turn := re.Segments[0]
	var trained []string
	for k, id := range turn.Tokens {
		if turn.Forced[k] == turn.Trained[k] {
			t.Errorf("token %d: forced %v, trained %v: a sampled token is one or the other", k, turn.Forced[k], turn.Trained[k])
		}
		if turn.Trained[k] {
			piece, _ := fam.Pieces([]int32{id})
			trained = append(trained, string(piece))
		}
	}
	if got := strings.Join(trained, ""); !strings.Contains(got, "calculate") || !strings.Contains(got, "12*34") {
		t.Errorf("trained pieces %q: want the tool's name and the argument", got)
	}
	var out strings.Builder
	re.print(&out, 1)
	if !strings.Contains(out.String(), "^") || !strings.Contains(out.String(), fmt.Sprintf("forced %d (marked ^)", c.Forced)) {
		t.Errorf("printed:\n%s", out.String())
	}
}

// grpo --env-cmd runs episodes in environment processes speaking the protocol (the example
// environment in Python, on two workers): the episodes run their turns, none fails in the
// environment, and config.json keeps the program. --env and --env-cmd exclude each other.
func TestGRPOWithEnvCmd(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the example environment needs it")
	}
	dir := t.TempDir()
	sft := envSFT(t, dir)
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := py + " " + filepath.Join(root, "rl", "env", "testdata", "guess_env.py")
	run := filepath.Join(dir, "cmd")
	out, err := runCLI(append([]string{"grpo", "--init", sft, "--env-cmd", cmd, "--env-workers", "2", "--run-dir", run}, envArgs...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, l := range metricLines(t, run, "grpo") {
		if turns, _ := l["turns/mean"].(float64); turns < 1 || l["episode/stop_reason/env_error"] != 0.0 || l["episode/env_tokens_mean"] == 0.0 {
			t.Errorf("turns/mean %v, env_error %v, environment tokens %v: want episodes the program answered",
				l["turns/mean"], l["episode/stop_reason/env_error"], l["episode/env_tokens_mean"])
		}
	}
	raw, err := os.ReadFile(filepath.Join(run, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"workers": 2`) || !strings.Contains(string(raw), "guess_env.py") {
		t.Errorf("config.json does not keep the environment program:\n%s", raw)
	}
	_, err = runCLI(append([]string{"grpo", "--init", sft, "--env", "guess", "--env-cmd", cmd, "--run-dir", filepath.Join(dir, "both")}, envArgs...)...)
	if err == nil || !strings.Contains(err.Error(), "--env guess and --env-cmd") {
		t.Errorf("--env with --env-cmd: %v", err)
	}
}
