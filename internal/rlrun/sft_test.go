package rlrun

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/rl"
)

// A resumed run's settings replace the flags'; one whose config predates last_turn_only
// trained the final assistant turn alone and goes on doing so; a bad config changes nothing.
func TestSFTSettingsDecode(t *testing.T) {
	s := SFTSettings{SFTConfig: rl.DefaultSFTConfig(), SFTOptions: SFTOptions{Preset: "gpt2-micro", CheckEvery: 25}}
	if err := s.Decode(json.RawMessage(`{"steps": 3, "preset": "tiny", "shape": {"layers": 1}}`)); err != nil {
		t.Fatal(err)
	}
	if s.Steps != 3 || s.Preset != "tiny" || s.Shape.Layers != 1 || s.CheckEvery != 25 || !s.LastTurnOnly {
		t.Errorf("decoded %+v: want steps 3, preset tiny, 1 layer, check_every kept and the last turn alone", s)
	}
	if err := s.Decode(json.RawMessage(`{"last_turn_only": false}`)); err != nil || s.LastTurnOnly {
		t.Errorf("last_turn_only false decoded as %v (err %v)", s.LastTurnOnly, err)
	}
	before := s
	if err := s.Decode(json.RawMessage(`{"steps": "x"}`)); err == nil || !reflect.DeepEqual(s, before) {
		t.Errorf("a bad config gave err %v and settings %+v, want an error and %+v", err, s, before)
	}
}

// config.json keeps the trainer's and sft's own settings side by side, last_turn_only always.
func TestSFTSettingsJSON(t *testing.T) {
	raw, err := json.Marshal(SFTSettings{SFTConfig: rl.DefaultSFTConfig(), SFTOptions: SFTOptions{Preset: "gpt2-micro", StopAtAccuracy: 0.6}})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"last_turn_only":false`, `"preset":"gpt2-micro"`, `"stop_at_accuracy":0.6`, `"shape":{"layers":0`, `"steps":`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("config %s lacks %s", raw, key)
		}
	}
}

// numbered gives prompts "p0", "p1", ..., repeating after n.
func numbered(n int) rl.PromptSource {
	i := 0
	return rl.PromptFunc(func() (rl.Prompt, error) {
		p := rl.Prompt{Text: fmt.Sprintf("p%d", i%n)}
		i++
		return p, nil
	})
}

func draw(t *testing.T, src rl.PromptSource, n int) []string {
	t.Helper()
	var out []string
	for range n {
		p, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Text)
	}
	return out
}

// A fixed set gives each of its problems once an epoch, and one restored from its saved
// position goes on in the same order.
func TestFixedSetResumesItsOrder(t *testing.T) {
	src, err := fixedSet(numbered(10), 3, 7)
	if err != nil {
		t.Fatal(err)
	}
	epoch := draw(t, src, 3)
	seen := map[string]bool{}
	for _, p := range epoch {
		seen[p] = true
	}
	if len(seen) != 3 || !seen["p0"] || !seen["p1"] || !seen["p2"] {
		t.Fatalf("an epoch gave %v, want p0, p1 and p2 once each", epoch)
	}
	draw(t, src, 2)
	state, err := src.(rl.StatefulSource).SourceState()
	if err != nil {
		t.Fatal(err)
	}
	restored, err := fixedSet(numbered(10), 3, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := restored.(rl.StatefulSource).SetSourceState(state); err != nil {
		t.Fatal(err)
	}
	if want, got := draw(t, src, 7), draw(t, restored, 7); !reflect.DeepEqual(got, want) {
		t.Errorf("restored set gave %v, want %v", got, want)
	}
}

// A saved position that does not fit the set is refused, naming --examples.
func TestFixedSetRefusesAForeignPosition(t *testing.T) {
	src, err := fixedSet(numbered(10), 3, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{`{"order": [0, 1], "pos": 0}`, `{"order": [0, 1, 5], "pos": 0}`, `{"order": [0, 1, 2], "pos": 4}`, `{`} {
		if err := src.(rl.StatefulSource).SetSourceState(json.RawMessage(raw)); err == nil || !strings.Contains(err.Error(), "--examples") {
			t.Errorf("position %s: err %v, want one naming --examples", raw, err)
		}
	}
}

// A source with fewer distinct problems than asked for is an error, not an endless draw.
func TestFixedSetTooFewProblems(t *testing.T) {
	if _, err := fixedSet(numbered(2), 3, 7); err == nil || !strings.Contains(err.Error(), "found only 2") {
		t.Errorf("err %v, want found only 2", err)
	}
}
