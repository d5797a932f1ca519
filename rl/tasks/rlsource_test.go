package tasks

import (
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/rl"
)

func TestParseMix(t *testing.T) {
	got, err := ParseMix(" addition:0.8, reverse:0.2 ")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != (MixEntry{"addition", 0.8}) || got[1] != (MixEntry{"reverse", 0.2}) {
		t.Fatalf("%+v", got)
	}
	if got, _ := ParseMix("copy"); len(got) != 1 || got[0].Weight != 1 {
		t.Fatalf("copy: %+v", got)
	}
	for spec, want := range map[string]string{"": "empty", "addition:x": "weight", "addition:-1": "weight",
		"addition,addition": "twice", ":0.5": "empty task name"} {
		if _, err := ParseMix(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error mentioning %q", spec, err, want)
		}
	}
	if _, err := NewMix("addition,division", DefaultOptions()); err == nil || !strings.Contains(err.Error(), "division") {
		t.Errorf("unknown task: %v", err)
	}
}

// An 80/20 mixture interleaves exactly by ratio without shuffling, every prompt is scored by
// its own task's reward, and the held-out set has n problems per task.
func TestMixSourceRewardAndHeldOut(t *testing.T) {
	m, err := NewMix("addition:4,reverse:1", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	src, err := m.Source(Train, false, 7)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	reward, err := m.Reward()
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		p, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		count[p.Task]++
		s, err := reward.Score(p.Text, p.Answer+rl.EOSText, p.Meta)
		if err != nil || s != 1 {
			t.Fatalf("%s %q: reference answer scored %v, %v", p.Task, p.Text, s, err)
		}
	}
	if count["addition"] != 80 || count["reverse"] != 20 {
		t.Fatalf("counts %v, want 80/20", count)
	}
	held, err := m.HeldOut(5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 10 || held[0].Task != "addition" || held[9].Task != "reverse" {
		t.Fatalf("held-out set: %d problems", len(held))
	}
}

// The copy task's end marker is a forced token of the template; addition has none.
func TestRLPromptTemplates(t *testing.T) {
	enc := gpt2(t)
	c, _ := NewCopy(DefaultCopyConfig())
	p, err := c.Format("abc").RL(enc)
	if err != nil {
		t.Fatal(err)
	}
	dot, _ := enc(" .")
	if len(p.Template) != 4 || p.Template[0] != rl.Unforced || p.Template[3] != dot[0] {
		t.Fatalf("copy template %v", p.Template)
	}
	a, _ := NewAddition(DefaultAdditionConfig())
	q, err := a.Format(12, 34).RL(enc)
	if err != nil {
		t.Fatal(err)
	}
	if q.Template != nil || q.Answer != " 4 6" || q.Meta["answer"] != " 4 6" {
		t.Fatalf("addition prompt %+v", q)
	}
	ids := EncoderOf(func(s string) []int32 { return []int32{int32(len(s)), 7} })
	if got, _ := ids("abc"); len(got) != 2 || got[0] != 3 || got[1] != 7 {
		t.Fatalf("EncoderOf: %v", got)
	}
}
