package env

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// scripted plays an episode with fixed turns, parsing their tool calls as a trainer would,
// and returns every step's result. It stops at the first result that is done.
func scripted(t *testing.T, e Env, example string, seed uint64, turns []string) (ResetResult, []StepResult) {
	t.Helper()
	ctx := context.Background()
	var row json.RawMessage
	if example != "" {
		row = json.RawMessage(example)
	}
	start, err := e.Reset(ctx, row, seed, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []StepResult
	for i, text := range turns {
		calls, _, err := toolcall.Parse(toolcall.Hermes, text)
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.Step(ctx, Turn{Index: i, Text: text, ToolCalls: calls})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		out = append(out, r)
		if r.Done {
			break
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return start, out
}

func TestCalculatorEpisode(t *testing.T) {
	f, err := Lookup("calculator")
	if err != nil {
		t.Fatal(err)
	}
	e, _ := f()
	row := `{"prompt": "What is 123456789 * 987654321?", "answer": "121932631112635269"}`
	start, steps := scripted(t, e, row, 7, []string{
		"<think>Too big to do by hand.</think>\n<tool_call>\n{\"name\": \"calculate\", \"arguments\": {\"expression\": \"123456789 * 987654321\"}}\n</tool_call>",
		`<tool_call>{"name": "calculate", "arguments": {"expression": "1/0"}}</tool_call><tool_call>{"name": "calc"}</tool_call>`,
		"The answer is 121,932,631,112,635,269.",
	})
	if len(start.Messages) != 0 || len(start.Tools) != 1 || !strings.Contains(string(start.Tools[0]), `"name":"calculate"`) {
		t.Fatalf("reset %+v: want the calculate tool and the row's own prompt", start)
	}
	want := []struct {
		msgs   []Message
		reward float64
		done   bool
	}{
		{[]Message{{Role: "tool", Content: "121932631112635269"}}, 0, false},
		{[]Message{
			{Role: "tool", Content: `error: tool "calculate": at byte 1: division by zero`, Error: true},
			{Role: "tool", Content: `error: unknown tool "calc"; the tools are calculate`, Error: true},
		}, 0, false},
		{nil, 1, true},
	}
	if len(steps) != len(want) {
		t.Fatalf("%d steps, want %d", len(steps), len(want))
	}
	for i, w := range want {
		got, _ := json.Marshal(steps[i].Messages)
		exp, _ := json.Marshal(w.msgs)
		if steps[i].Reward != w.reward || steps[i].Done != w.done || (len(w.msgs) > 0 && string(got) != string(exp)) || (len(w.msgs) == 0 && len(steps[i].Messages) != 0) {
			t.Errorf("step %d: %+v\nwant messages %s, reward %v, done %v", i, steps[i], exp, w.reward, w.done)
		}
	}
}

func TestCalculatorJudge(t *testing.T) {
	row := json.RawMessage(`{"answer": -42}`)
	for _, c := range []struct {
		text      string
		truncated bool
		want      float64
	}{
		{"-42", false, 1},
		{"First 7, then -42.", false, 1},
		{"<think>It is 5.</think>It is -42", false, 1},
		{"It is -42</think>maybe 5", false, 0}, // only the text after thinking counts
		{"-42 or 43", false, 0},
		{"-42", true, 0}, // a turn cut off is not an answer
		{"no idea", false, 0},
	} {
		got, err := judgeCalculator(row, Turn{Text: c.text, Truncated: c.truncated})
		if err != nil || got != c.want {
			t.Errorf("%q (truncated %v): reward %v, %v; want %v", c.text, c.truncated, got, err, c.want)
		}
	}
}

// Without a dataset the calculator asks a problem of its own, the same for every sample of a
// seed, and its answer is what calculate gives for it.
func TestCalculatorOwnProblems(t *testing.T) {
	seen := map[string]bool{}
	for seed := uint64(0); seed < 20; seed++ {
		q, a := calculatorProblem(seed)
		if q2, a2 := calculatorProblem(seed); q2 != q || a2 != a {
			t.Fatalf("seed %d: %q then %q", seed, q, q2)
		}
		seen[q] = true
		expr := strings.TrimSuffix(strings.TrimPrefix(q, "What is "), "? Reply with the exact answer as a number.")
		v, err := evaluate(expr)
		if err != nil || formatRat(v) != a {
			t.Fatalf("seed %d: %q: evaluate gives %v, %v; answer %s", seed, q, v, err, a)
		}
		if len(strings.TrimPrefix(a, "-")) < 6 && !strings.Contains(expr, "-") {
			t.Errorf("seed %d: %q = %s: too small to need a tool", seed, expr, a)
		}
	}
	if len(seen) < 18 {
		t.Errorf("20 seeds made %d problems", len(seen))
	}

	e, _ := newCalculator()
	start, err := e.Reset(context.Background(), json.RawMessage(`{}`), 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	q, a := calculatorProblem(3)
	if len(start.Messages) != 1 || start.Messages[0].Role != "user" || start.Messages[0].Content != q {
		t.Fatalf("reset without a dataset: %+v, want the question %q", start.Messages, q)
	}
	r, err := e.Step(context.Background(), Turn{Text: "It is " + a + "."})
	if err != nil || r.Reward != 1 || !r.Done {
		t.Errorf("the right answer: %+v, %v", r, err)
	}
}

func TestFaultCalculatorRows(t *testing.T) {
	for row, want := range map[string]string{
		`[1, 2]`:               "the row is not a JSON object",
		`{"answer": "twelve"}`: `the row's "answer" is "twelve", want an integer`,
		`{"answer": 1.5}`:      `the row's "answer" is 1.5, want an integer`,
		`{"answer": true}`:     `the row's "answer" is true, want an integer`,
	} {
		e, _ := newCalculator()
		if _, err := e.Reset(context.Background(), json.RawMessage(row), 0, 0); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", row, err, want)
		}
	}
}
