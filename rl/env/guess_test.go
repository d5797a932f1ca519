package env

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// secretOf starts a guess episode and reads its secret from the first step's info.
func secretOf(t *testing.T, seed uint64, sample int) int {
	t.Helper()
	e, _ := newGuess()
	if _, err := e.Reset(context.Background(), nil, seed, sample); err != nil {
		t.Fatal(err)
	}
	r, err := e.Step(context.Background(), Turn{Text: "50"})
	if err != nil {
		t.Fatal(err)
	}
	return r.Info["secret"].(int)
}

// The secret depends on the seed only: the same for every sample of a group, spread over
// 1 to 100 across seeds, and fixed for a seed from one version to the next.
func TestGuessSecretFromSeed(t *testing.T) {
	if got := []int{secretOf(t, 0, 0), secretOf(t, 1, 0), secretOf(t, 2, 0), secretOf(t, 3, 0)}; got[0] != 1 || got[1] != 41 || got[2] != 9 || got[3] != 51 {
		t.Errorf("seeds 0 to 3 give %v, want [1 41 9 51]", got)
	}
	count := map[int]int{}
	for seed := uint64(0); seed < 2000; seed++ {
		s := secretOf(t, seed, 0)
		if s < 1 || s > 100 {
			t.Fatalf("seed %d: secret %d", seed, s)
		}
		if seed < 50 && secretOf(t, seed, 3) != s {
			t.Fatalf("seed %d: sample 3 faces another secret", seed)
		}
		count[s]++
	}
	if len(count) != 100 {
		t.Errorf("2000 seeds give %d of the 100 secrets", len(count))
	}
}

func TestGuessEpisode(t *testing.T) {
	f, err := Lookup("guess")
	if err != nil {
		t.Fatal(err)
	}
	e, _ := f()
	start, steps := scripted(t, e, `{"prompt": "ignored"}`, 1, []string{ // the secret is 41
		"<think>Halve the range: 50.</think>I guess 50.",
		"Then 25",
		"Hmm.",
		"Maybe 250",
		"41",
		"never sent",
	})
	if len(start.Messages) != 1 || start.Messages[0].Content != guessPrompt || start.Tools == nil || len(start.Tools) != 0 {
		t.Fatalf("reset %+v: want the rules and no tools", start)
	}
	b, _ := json.Marshal(start)
	if !strings.Contains(string(b), `"tools":[]`) {
		t.Errorf("reset marshals as %s: no tools must read \"tools\": []", b)
	}
	want := []string{
		"Lower.",
		"Higher.",
		"Reply with one whole number from 1 to 100.",
		"250 is not from 1 to 100. Reply with one whole number from 1 to 100.",
		"Correct: the number is 41.",
	}
	if len(steps) != len(want) {
		t.Fatalf("%d steps, want %d", len(steps), len(want))
	}
	for i, w := range want {
		r := steps[i]
		last := i == len(want)-1
		if len(r.Messages) != 1 || r.Messages[0].Role != "user" || r.Messages[0].Content != w || r.Done != last || (r.Reward == 1) != last {
			t.Errorf("step %d: %+v, want user message %q, done and reward 1 only at the end", i, r, w)
		}
	}
	if _, err := e.Step(context.Background(), Turn{Index: 5, Text: "41"}); err == nil {
		t.Error("a step after the episode ended was answered")
	}
}

func TestGuessTurnLimit(t *testing.T) {
	e, _ := newGuess()
	turns := make([]string, GuessTurns+1)
	for i := range turns {
		turns[i] = "100"
	}
	_, steps := scripted(t, e, "", 1, turns)
	if len(steps) != GuessTurns {
		t.Fatalf("%d steps, want %d", len(steps), GuessTurns)
	}
	last := steps[len(steps)-1]
	if !last.Done || last.Reward != 0 || last.Messages[0].Content != "Lower. No more guesses: the number was 41." {
		t.Errorf("last step %+v", last)
	}
	for _, r := range steps[:len(steps)-1] {
		if r.Done || r.Reward != 0 {
			t.Errorf("step before the limit: %+v", r)
		}
	}
}

func TestFaultGuessTruncatedTurn(t *testing.T) {
	e, _ := newGuess()
	if _, err := e.Reset(context.Background(), nil, 1, 0); err != nil {
		t.Fatal(err)
	}
	r, err := e.Step(context.Background(), Turn{Text: "I think it is 4", Truncated: true}) // maybe 41, cut off
	if err != nil || r.Done || r.Reward != 0 || !strings.HasPrefix(r.Messages[0].Content, "Your reply was cut off.") {
		t.Errorf("truncated turn: %+v, %v", r, err)
	}
	if _, err := new(guess).Step(context.Background(), Turn{}); err == nil || !strings.Contains(err.Error(), "Step before Reset") {
		t.Errorf("Step before Reset: %v", err)
	}
}

func TestLookup(t *testing.T) {
	if got := strings.Join(Names(), ","); got != "calculator,guess" {
		t.Errorf("Names() = %s", got)
	}
	if _, err := Lookup("chess"); err == nil || err.Error() != `environment "chess": the built-in environments are calculator, guess` {
		t.Errorf("Lookup(chess): %v", err)
	}
}
