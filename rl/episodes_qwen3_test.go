package rl

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/hftok"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/episode"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestQwen3VocabularyEpisodes: a tiny random Qwen3 over the real Qwen3 vocabulary, its chat
// template and tokenizer, trains a GRPO step on the guessing game (and renders the
// calculator's tool in its prompt): episodes of several turns
// whose replies are the template's user turns, each opening with <|im_end|> after a turn cut
// at its cap (and only then), and tokens trained exactly as sampled.
func TestQwen3VocabularyEpisodes(t *testing.T) {
	dir := filepath.Join(testutil.FixturesDir(t), "llama", "tokenizer")
	tok, err := hftok.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := hftok.LoadTemplate(dir)
	if err != nil {
		t.Fatal(err)
	}
	render, err := episode.NewChatRenderer(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	eot, ok := tok.ID(render.EndOfTurn())
	if !ok {
		t.Fatalf("no %s in the vocabulary", render.EndOfTurn())
	}
	cfg := llama.Config{ModelType: "qwen3", Architecture: "Qwen3ForCausalLM", Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1,
		HeadDim: 8, Intermediate: 32, Vocab: tok.VocabSize(), MaxPositions: 256, RMSNormEps: 1e-6, RopeTheta: 10000,
		QKNorm: true, TieEmbeddings: true, EOS: []int{eot}}
	m, err := llama.New(cpu.New(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(5); err != nil {
		t.Fatal(err)
	}
	guess, err := env.Lookup("guess")
	if err != nil {
		t.Fatal(err)
	}
	tc := DefaultGRPOTrainerConfig()
	tc.Train.PromptsPerStep, tc.Train.Steps, tc.GRPO.GroupSize = 1, 1, 2
	tc.Train.Rollout.MaxNewTokens, tc.Train.Rollout.EOS = 6, eot
	lim := episode.DefaultLimits()
	lim.MaxTurns, lim.MaxEpisodeTokens = 3, 200
	tc.Train.Episodes = &lim
	htok := HFTokenizer{Tokenizer: tok}
	empty := PromptFunc(func() (Prompt, error) { return Prompt{}, nil }) // the game opens the conversation
	tr, err := NewGRPOTrainer(nn.Llama(m), htok, empty, envReward(t), tc)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.SetEnvironment(Environment{New: guess, Render: render, Tok: htok}); err != nil {
		t.Fatal(err)
	}
	rep, err := tr.TrainStep()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Metrics["token_alignment"] != 1 || rep.Metrics["turns/mean"] < 2 {
		t.Errorf("token alignment %v, %v turns a episode", rep.Metrics["token_alignment"], rep.Metrics["turns/mean"])
	}
	// The calculator offers its tool: the prompt is the template's, tools section included.
	calc, err := env.Lookup("calculator")
	if err != nil {
		t.Fatal(err)
	}
	ec := tc.Train.episodeConfig(true)
	ec.MaxEpisodeTokens = 250
	eps, err := RunEpisodes(nn.Llama(m), &Environment{New: calc, Render: render, Tok: htok}, ec, []Prompt{{}}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	prompt, _ := htok.Decode(eps[0].Prompt)
	if !strings.HasPrefix(prompt, "<|im_start|>system\n# Tools") || !strings.Contains(prompt, `"name": "calculate"`) || !strings.HasSuffix(prompt, "<|im_start|>assistant\n") {
		t.Errorf("the calculator's prompt is not Qwen3's with its tool:\n%s", prompt)
	}
	for i, c := range rep.Completions {
		for k, seg := range c.Turns {
			if seg.Role != "environment" {
				continue
			}
			cut := c.Turns[k-1].Tokens[len(c.Turns[k-1].Tokens)-1] != int32(eot)
			if reply, closed := strings.CutPrefix(seg.Text, "<|im_end|>"); closed != cut ||
				!strings.HasPrefix(reply, "\n<|im_start|>user\n") || !strings.HasSuffix(reply, "<|im_start|>assistant\n") {
				t.Errorf("episode %d, segment %d: %q is not a user turn (after a cut turn: %v)", i, k, seg.Text, cut)
			}
			if got := htok.Encode(seg.Text); !slices.Equal(got, seg.Tokens) {
				t.Errorf("episode %d, segment %d: tokens %v are not the reply's encoding %v", i, k, seg.Tokens, got)
			}
		}
	}
}
