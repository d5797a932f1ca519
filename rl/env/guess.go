package env

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/vkgrad/vkgrad/internal/rng"
)

// guessSeedKey keys the secret numbers apart from other users of the seed.
const guessSeedKey = 0x9e55

// GuessTurns is the guessing game's turn limit: enough for a binary search of 1 to 100.
const GuessTurns = 7

// guessPrompt opens the game.
const guessPrompt = "I am thinking of a whole number from 1 to 100. Guess it: reply with one number, and I will say higher or lower."

// guess is the built-in "guess" environment, multi-turn and without tools: the secret is a
// number from 1 to 100 picked by the seed; each turn's last integer is a guess, answered
// "Higher." or "Lower." as a user message. Reward 1 and done when guessed; done with 0 after
// GuessTurns turns. The row is not read.
type guess struct {
	secret int
	done   bool
}

func newGuess() (Env, error) { return &guess{}, nil }

// Reset picks the secret and asks for a guess; no tools are offered.
func (g *guess) Reset(_ context.Context, _ json.RawMessage, seed uint64, _ int) (ResetResult, error) {
	*g = guess{secret: 1 + rng.Keyed(seed, guessSeedKey).Intn(100)}
	return ResetResult{
		Messages: []Message{{Role: "user", Content: guessPrompt}},
		Tools:    []json.RawMessage{},
	}, nil
}

// Step answers the turn's guess.
func (g *guess) Step(_ context.Context, turn Turn) (StepResult, error) {
	if g.secret == 0 {
		return StepResult{}, fmt.Errorf("guess: Step before Reset")
	}
	if g.done {
		return StepResult{}, fmt.Errorf("guess: turn %d: the episode has ended", turn.Index)
	}
	n, reply := g.answer(turn)
	r := StepResult{Info: map[string]any{"secret": g.secret}}
	if n > 0 {
		r.Info["guess"] = n
	}
	switch {
	case n == g.secret:
		r.Reward, r.Done = 1, true
	case turn.Index+1 >= GuessTurns:
		r.Done = true
		reply += fmt.Sprintf(" No more guesses: the number was %d.", g.secret)
	}
	g.done = r.Done
	r.Messages = []Message{{Role: "user", Content: reply}}
	return r, nil
}

// answer reads the turn's guess (0 when there is none) and says what the user replies.
func (g *guess) answer(turn Turn) (int, string) {
	const again = "Reply with one whole number from 1 to 100."
	if turn.Truncated {
		return 0, "Your reply was cut off. " + again
	}
	s, ok := lastInteger(turn.Text)
	if !ok {
		return 0, again
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil || n < 1 || n > 100:
		return 0, s + " is not from 1 to 100. " + again
	case n < g.secret:
		return n, "Higher."
	case n > g.secret:
		return n, "Lower."
	}
	return n, fmt.Sprintf("Correct: the number is %d.", n)
}

// Close does nothing: the game holds nothing.
func (g *guess) Close() error { return nil }
