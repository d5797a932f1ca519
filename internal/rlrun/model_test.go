package rlrun

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/rl/tasks"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// tinyGPT2 is a GPT-2 of a 16-token context over the GPT-2 tokenizer's vocabulary.
func tinyGPT2(t *testing.T) *nn.GPT2LM {
	t.Helper()
	m, err := gpt2.New(cpu.NewWithThreads(1), gpt2.Config{MaxSeqLen: 16, VocabSize: 50257, PaddedVocabSize: 50304, NumLayers: 1, NumHeads: 2, Channels: 16})
	if err != nil {
		t.Fatal(err)
	}
	return nn.GPT2(m)
}

// LoRA adapters are for Llama-family models: a GPT-2 is refused them, naming the flag and the
// model; without a rank nothing changes.
func TestAddAdaptersRefusesGPT2(t *testing.T) {
	m := tinyGPT2(t)
	if err := (LoRA{}).AddAdapters(m); err != nil {
		t.Fatalf("no rank: %v", err)
	}
	err := LoRA{Rank: 4}.AddAdapters(m)
	if want := "--lora-rank: LoRA adapters are for Llama-family models, not a GPT-2 (" + DescribePolicy(m) + ")"; err == nil || err.Error() != want {
		t.Fatalf("err %v, want %q", err, want)
	}
}

// A dataset prompt the context cannot hold with room for a completion (or, supervised, with
// its answer) is refused before training, naming its file and line; the GPT-2 vocabulary needs
// no limit.
func TestCheckPromptsAndVocab(t *testing.T) {
	m := tinyGPT2(t)
	fam, err := OpenFamily("", "")
	if err != nil {
		t.Fatal(err)
	}
	fits := tasks.Prompt{Text: "1 + 2 =", Answer: " 3", Where: "sums.jsonl:1"}
	long := tasks.Prompt{Text: strings.Repeat(" 1", 16), Answer: " 3", Where: "sums.jsonl:2"}
	near := tasks.Prompt{Text: strings.Repeat(" 1", 14), Answer: strings.Repeat(" 2", 3), Where: "sums.jsonl:3"}
	if err := (&Setup{Prompts: []tasks.Prompt{fits, near}}).CheckPrompts(m, fam.Tok, false); err != nil {
		t.Fatalf("prompts that fit: %v", err)
	}
	for _, c := range []struct {
		p          tasks.Prompt
		supervised bool
		want       string
	}{
		{long, false, "sums.jsonl:2: the prompt's 16 tokens leave no room for a completion in the model's context of 16"},
		{near, true, "sums.jsonl:3: the prompt (14 tokens) and its answer exceed the model's context of 16"},
		{tasks.Prompt{Where: "sums.jsonl:4"}, false, "sums.jsonl:4: the prompt encodes to no tokens"},
	} {
		err := (&Setup{Prompts: []tasks.Prompt{fits, c.p}}).CheckPrompts(m, fam.Tok, c.supervised)
		if err == nil || err.Error() != c.want {
			t.Errorf("err %v, want %q", err, c.want)
		}
	}
	if err := LimitVocab(m, fam.Tok, zerolog.Nop()); err != nil || m.VocabSize() != 50257 {
		t.Fatalf("GPT-2's vocabulary: %d, %v; want 50257 unchanged", m.VocabSize(), err)
	}
}
