package episode

import (
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/sample"
)

// toyTasks are n episodes in groups of 3 (a group shares a seed), each on its own stream.
func toyTasks(n int) []Task {
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = Task{Seed: uint64(100 + i/3), Sample: i % 3, RNG: rng.Keyed(9, uint64(i/3), uint64(i%3))}
	}
	return tasks
}

func toyConfig() Config {
	cfg := DefaultConfig()
	cfg.Sampling = sample.Options{Temperature: 1.1, TopK: 20, TopP: 0.95}
	cfg.EndOfTurn = toyEOT
	cfg.MaxNewTokens, cfg.MaxTurns, cfg.MaxEpisodeTokens = 12, 4, 40
	return cfg
}

func runToy(t *testing.T, tasks []Task, cfg Config, slots int) ([]*Episode, *hashDecoder, Stats, int) {
	t.Helper()
	d := newHashDecoder(slots, 200)
	var closed int
	var mu sync.Mutex
	eps, st, err := Run(d, byteTok{}, NewPlainRenderer("<eot>"), scriptFactory(&closed, &mu), tasks, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return eps, d, st, closed
}

// TestRunSameForAnySchedule: the episodes are the same bits with 1, 2, 5 or 7 slots and any
// number of steps sat out per environment call, although the environments answer in any order.
func TestRunSameForAnySchedule(t *testing.T) {
	cfg := toyConfig()
	want, _, _, closed := runToy(t, toyTasks(7), cfg, 7)
	if closed != 7 {
		t.Errorf("%d environments closed, want 7", closed)
	}
	reasons := map[string]int{}
	for _, ep := range want {
		reasons[ep.StopReason]++
	}
	t.Logf("stop reasons %v", reasons)
	if reasons[StopDone] == 0 || reasons[StopEnvError] == 0 || reasons[StopMaxTurns]+reasons[StopMaxEpisodeTokens] == 0 {
		t.Fatalf("stop reasons %v: the test wants episodes that end each way", reasons)
	}
	for _, slots := range []int{1, 2, 5} {
		for _, rejoin := range []int{1, 3} {
			c := cfg
			c.RejoinSteps = rejoin
			got, _, _, _ := runToy(t, toyTasks(7), c, slots)
			for i := range want {
				if err := sameEpisode(want[i], got[i]); err != "" {
					t.Errorf("%d slots, rejoin %d, episode %d: %s", slots, rejoin, i, err)
				}
			}
		}
	}
}

func sameEpisode(a, b *Episode) string {
	for name, pair := range map[string][2]any{
		"prompt": {a.Prompt, b.Prompt}, "tokens": {a.Tokens, b.Tokens}, "sampled": {a.Sampled, b.Sampled},
		"log-probs": {a.LogProb, b.LogProb}, "truncated log-probs": {a.Trunc, b.Trunc}, "kept": {a.Kept, b.Kept},
		"cutoffs": {a.Cutoff, b.Cutoff}, "turns": {a.Turns, b.Turns}, "return": {a.Return, b.Return},
		"stop reason": {a.StopReason, b.StopReason}, "messages": {a.Messages, b.Messages},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			return name + " differ"
		}
	}
	return ""
}

// TestRunFeedsEachTokenOnce: each row's cache holds exactly its episode's prompt and tokens
// (the last sampled token is never fed): every reply was prefilled after its turn, nothing
// was fed twice.
func TestRunFeedsEachTokenOnce(t *testing.T) {
	tasks := toyTasks(6)
	eps, d, st, _ := runToy(t, tasks, toyConfig(), len(tasks)) // episode i on slot i
	fed := 0
	for i, ep := range eps {
		if ep.StopReason == StopEnvError && len(ep.Tokens) == 0 {
			continue
		}
		want := slices.Concat(ep.Prompt, ep.Tokens[:len(ep.Tokens)-1])
		if !slices.Equal(d.rows[i], want) {
			t.Errorf("episode %d: the row fed %d tokens, want its %d prompt and tokens but the last", i, len(d.rows[i]), len(want))
		}
		fed += len(want)
	}
	if st.Decoded+st.PrefillTokens != fed {
		t.Errorf("stats count %d decoded and %d prefilled tokens, want %d in all", st.Decoded, st.PrefillTokens, fed)
	}
}

// TestRunTurnsAndDeltas: the sampled tokens are the turns' (each turn ends at the end-of-turn
// token or its cap), the environment's tokens between them are exactly the renderer's delta
// encoded (opening with an end-of-turn token after a truncated turn), the return is the sum
// of the turn rewards, and every stop reason is the one the episode earned.
func TestRunTurnsAndDeltas(t *testing.T) {
	cfg := toyConfig()
	tasks := toyTasks(7)
	eps, _, _, _ := runToy(t, tasks, cfg, 3)
	r, tok := NewPlainRenderer("<eot>"), byteTok{}
	truncatedSeen := false
	reasons := map[string]int{}
	for i, ep := range eps {
		if len(ep.Sampled) != len(ep.Tokens) || len(ep.LogProb) != len(ep.Tokens) || len(ep.Cutoff) != len(ep.Tokens) {
			t.Fatalf("episode %d: per-token records of unequal lengths", i)
		}
		sum := 0.0
		for k, turn := range ep.Turns {
			sum += turn.Reward
			for p := turn.Start; p < turn.End; p++ {
				if !ep.Sampled[p] {
					t.Errorf("episode %d turn %d: token %d not marked sampled", i, k, p)
				}
			}
			n := turn.End - turn.Start
			ended := ep.Tokens[turn.End-1] == toyEOT
			if ended == turn.Truncated || !ended && n != cfg.MaxNewTokens && len(ep.Prompt)+turn.End < cfg.MaxEpisodeTokens {
				t.Errorf("episode %d turn %d: %d tokens, truncated %v, last token %d", i, k, n, turn.Truncated, ep.Tokens[turn.End-1])
			}
			if k+1 == len(ep.Turns) {
				if turn.End != len(ep.Tokens) {
					t.Errorf("episode %d: tokens after its last turn", i)
				}
				continue
			}
			next := ep.Turns[k+1].Start
			delta, err := r.Delta(ep.Messages[2*k+2:2*k+3], nil, turn.Truncated)
			if err != nil {
				t.Fatal(err)
			}
			if got := ep.Tokens[turn.End:next]; !slices.Equal(got, tok.Encode(delta)) {
				t.Errorf("episode %d after turn %d: environment tokens %v, want %q encoded", i, k, got, delta)
			}
			for p := turn.End; p < next; p++ {
				if ep.Sampled[p] || ep.Cutoff[p] != sample.NoCutoff || ep.LogProb[p] != 0 {
					t.Errorf("episode %d: environment token %d marked as sampled", i, p)
				}
			}
			truncatedSeen = truncatedSeen || turn.Truncated
		}
		if ep.Return != sum {
			t.Errorf("episode %d: return %v, want the turns' sum %v", i, ep.Return, sum)
		}
		used := len(ep.Prompt) + len(ep.Tokens)
		last := ep.Turns[len(ep.Turns)-1]
		delta := ""
		if reply := ep.Messages[len(ep.Messages)-1:]; reply[0].Role != "assistant" {
			var err error
			if delta, err = r.Delta(reply, nil, last.Truncated); err != nil {
				t.Fatal(err)
			}
		}
		want := StopMaxTurns
		switch {
		case i == 4 && len(ep.Turns) == 2:
			want = StopEnvError
		case tasks[i].Sample == 0 && len(ep.Turns) == 3:
			want = StopDone
		case used >= cfg.MaxEpisodeTokens: // the turn filled the context
			want = StopMaxEpisodeTokens
		case len(ep.Turns) < cfg.MaxTurns && used+len(tok.Encode(delta)) >= cfg.MaxEpisodeTokens: // no room for the reply and a token
			want = StopMaxEpisodeTokens
		}
		reasons[want]++
		if ep.StopReason != want {
			t.Errorf("episode %d: stopped for %s after %d turns and %d tokens, want %s", i, ep.StopReason, len(ep.Turns), len(ep.Prompt)+len(ep.Tokens), want)
		}
	}
	if !truncatedSeen {
		t.Error("no turn was cut at its cap: the test wants one")
	}
	if len(reasons) != 4 {
		t.Errorf("stop reasons %v: the test wants every reason but the timeout", reasons)
	}
}
