package env

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/vkgrad/vkgrad/internal/rng"
)

// calculatorSeedKey keys the calculator's problems apart from other users of the seed.
const calculatorSeedKey = 0xca1c

// calculateTool evaluates arithmetic exactly, for numbers too large to multiply in one's head.
var calculateTool = Tool{
	Name:        "calculate",
	Description: "Evaluate an arithmetic expression exactly: integers of any size, + - * / and parentheses.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string","description":"e.g. (12345 + 678) * 9"}},"required":["expression"]}`),
	Func: func(_ context.Context, args map[string]any) (string, error) {
		v, err := evaluate(args["expression"].(string)) // the schema made it a string
		if err != nil {
			return "", err
		}
		return formatRat(v), nil
	},
}

// calculator is the built-in "calculator" environment: an arithmetic question with large
// numbers, the tool calculate, and reward 1 when the final turn (the first without tool
// calls) ends with the exact answer. The row's "answer" (an integer, as a string or a
// number) is the answer to its prompt; a row without one gets a problem made from the seed,
// asked as a user message.
type calculator struct{ ToolEnv }

func newCalculator() (Env, error) {
	return &calculator{ToolEnv{Tools: []Tool{calculateTool}, Judge: judgeCalculator}}, nil
}

// Reset offers calculate and, when the row has no answer, asks a problem of its own.
func (c *calculator) Reset(ctx context.Context, example json.RawMessage, seed uint64, sample int) (ResetResult, error) {
	_, ok, err := rowAnswer(example)
	if err != nil {
		return ResetResult{}, err
	}
	var msgs []Message
	if !ok {
		q, a := calculatorProblem(seed)
		msgs = []Message{{Role: "user", Content: q}}
		if example, err = json.Marshal(map[string]string{"prompt": q, "answer": a}); err != nil {
			return ResetResult{}, err
		}
	}
	r, err := c.ToolEnv.Reset(ctx, example, seed, sample)
	r.Messages = msgs
	return r, err
}

// calculatorProblem makes a question whose numbers are too large to work out reliably
// without the tool, and its answer.
func calculatorProblem(seed uint64) (question, answer string) {
	r := rng.Keyed(seed, calculatorSeedKey)
	op := "+-*"[r.Intn(3)]
	digits := 7 + r.Intn(4) // 7 to 10 digits; 4 to 6 for a product
	if op == '*' {
		digits = 4 + r.Intn(3)
	}
	operand := func() *big.Int {
		lo := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(digits-1)), nil)
		return lo.Add(lo, big.NewInt(int64(r.Uint64()%(9*lo.Uint64()))))
	}
	a, b := operand(), operand()
	v := new(big.Int)
	switch op {
	case '+':
		v.Add(a, b)
	case '-':
		v.Sub(a, b)
	default:
		v.Mul(a, b)
	}
	q := fmt.Sprintf("What is %s %c %s? Reply with the exact answer as a number.", a, op, b)
	return q, v.String()
}

// rowAnswer reads the row's "answer" integer; ok is false when the row has none.
func rowAnswer(example json.RawMessage) (answer *big.Int, ok bool, err error) {
	var row struct {
		Answer json.RawMessage `json:"answer"`
	}
	if len(example) > 0 {
		if err := json.Unmarshal(example, &row); err != nil {
			return nil, false, fmt.Errorf("calculator: the row is not a JSON object: %v", err)
		}
	}
	s := string(row.Answer)
	if s == "" || s == "null" {
		return nil, false, nil
	}
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(row.Answer, &s); err != nil {
			return nil, false, fmt.Errorf(`calculator: the row's "answer": %v`, err)
		}
	}
	answer, ok = new(big.Int).SetString(strings.TrimSpace(s), 10)
	if !ok {
		return nil, false, fmt.Errorf(`calculator: the row's "answer" is %s, want an integer`, row.Answer)
	}
	return answer, true, nil
}

// judgeCalculator gives 1 when the final turn's last integer is the row's answer; a turn cut
// off by a token limit gets 0.
func judgeCalculator(example json.RawMessage, final Turn) (float64, error) {
	want, ok, err := rowAnswer(example)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf(`calculator: the row has no "answer"`)
	}
	got, found := lastInteger(final.Text)
	if final.Truncated || !found {
		return 0, nil
	}
	if g, ok := new(big.Int).SetString(got, 10); ok && g.Cmp(want) == 0 {
		return 1, nil
	}
	return 0, nil
}
