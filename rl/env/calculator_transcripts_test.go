package env

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// runTranscripts runs testdata/calculator_transcripts.py with args and returns its lines.
func runTranscripts(t *testing.T, args ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the transcripts script is not run")
	}
	cmd := exec.Command("python3", append([]string{"testdata/calculator_transcripts.py"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("calculator_transcripts.py %v: %v\n%s", args, err, stderr.Bytes())
	}
	var lines []string
	for s := bufio.NewScanner(bytes.NewReader(out)); s.Scan(); {
		lines = append(lines, s.Text())
	}
	return lines
}

var questionPattern = regexp.MustCompile(`^What is (\d+) ([-+*]) (\d+)\? Reply with the exact answer as a number\.$`)

// questionOperands reads the operands of a question as the script writes it.
func questionOperands(t *testing.T, q string) (a, b int) {
	t.Helper()
	m := questionPattern.FindStringSubmatch(q)
	if m == nil {
		t.Fatalf("question %q: not the calculator's form", q)
	}
	a, _ = strconv.Atoi(m[1])
	b, _ = strconv.Atoi(m[3])
	return a, b
}

// Each transcript, played in the calculator, gets its own tool result and reward 1.
func TestCalculatorTranscriptsPlay(t *testing.T) {
	f, err := Lookup("calculator")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range runTranscripts(t, "30", "4", "--digits", "1-3", "--split", "train") {
		var tr struct {
			Messages []Message `json:"messages"`
		}
		if err := json.Unmarshal([]byte(line), &tr); err != nil || len(tr.Messages) != 4 {
			t.Fatalf("%s: %v, want 4 messages", line, err)
		}
		if a, b := questionOperands(t, tr.Messages[0].Content); a > 999 || b > 999 {
			t.Errorf("%q: an operand has more than 3 digits", tr.Messages[0].Content)
		}
		answer := tr.Messages[3].Content
		row, _ := json.Marshal(map[string]string{"prompt": tr.Messages[0].Content, "answer": answer})
		e, _ := f()
		_, steps := scripted(t, e, string(row), 1, []string{tr.Messages[1].Content, answer})
		if len(steps) != 2 || len(steps[0].Messages) != 1 || steps[0].Messages[0].Content != tr.Messages[2].Content || steps[1].Reward != 1 {
			t.Errorf("%s: played as %+v, want the tool message %q and reward 1", line, steps, tr.Messages[2].Content)
		}
	}
}

// Rows of the held-out part are distinct and never in the train part, whatever the seeds.
func TestCalculatorTranscriptsSplit(t *testing.T) {
	heldOut := map[string]bool{}
	for _, line := range runTranscripts(t, "150", "3", "--digits", "1-2", "--split", "held-out", "--rows") {
		var row struct{ Prompt, Answer string }
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if a, b := questionOperands(t, row.Prompt); a > 99 || b > 99 {
			t.Errorf("%q: an operand has more than 2 digits", row.Prompt)
		}
		if heldOut[row.Prompt] {
			t.Errorf("%q held out twice", row.Prompt)
		}
		heldOut[row.Prompt] = true
	}
	if len(heldOut) != 150 {
		t.Fatalf("%d held-out rows, want 150", len(heldOut))
	}
	train := runTranscripts(t, "3000", "5", "--digits", "1-2", "--split", "train", "--rows")
	if len(train) != 3000 {
		t.Fatalf("%d train rows, want 3000", len(train))
	}
	for _, line := range train {
		var row struct{ Prompt string }
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if heldOut[row.Prompt] {
			t.Errorf("%q is in both parts", row.Prompt)
		}
	}
}

// Without --digits the script draws as it always did: the first problem of seed 7 is fixed.
func TestCalculatorTranscriptsDefault(t *testing.T) {
	lines := runTranscripts(t, "1", "7")
	want := `{"messages": [{"role": "user", "content": "What is 62992312 - 97366946? Reply with the exact answer as a number."}, ` +
		`{"role": "assistant", "content": "<tool_call>{\"name\": \"calculate\", \"arguments\": {\"expression\": \"62992312 - 97366946\"}}</tool_call>"}, ` +
		`{"role": "tool", "content": "-34374634"}, {"role": "assistant", "content": "-34374634"}]}`
	if len(lines) != 1 || lines[0] != want {
		t.Fatalf("got %q\nwant %q", lines, want)
	}
}
