package sample

import (
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/vkgrad/vkgrad/internal/rng"
)

// RowDecoder is a key/value-cache decoder whose rows each keep their own position
// (gpt2.Decoder, llama.Decoder): what GenerateBatch drives, one row per slot.
type RowDecoder interface {
	// StepRagged feeds tokens[i] to rows[i], each at its own next position, and returns the
	// logits of each listed row's last new position, row after row.
	StepRagged(rows []int, tokens [][]int32) ([]float32, error)
	// ForkPrefix copies the first n positions of row src's cache into each dst row and sets
	// them at n.
	ForkPrefix(src, n int, dst []int) error
	// ResetRow starts one row again at position 0.
	ResetRow(row int) error
	Limit() int     // positions a row holds
	Rows() int      // slots
	VocabSize() int // meaningful logits per row
}

// Request is one completion to draw.
type Request struct {
	Prompt []int32
	// Group names the requests that share Prompt (a GRPO group): those admitted together
	// prefill it once, on one slot, and fork the cache to the others.
	Group int
	// RNG is the request's own stream, one uniform per new token, so its tokens do not depend
	// on the other requests; nil when greedy.
	RNG *rng.RNG
	// MaxNew, when positive, caps this request's new tokens below BatchConfig.MaxNew (an
	// episode's remaining budget).
	MaxNew int
}

// BatchConfig says how GenerateBatch draws.
type BatchConfig struct {
	// MaxNew caps each request's new tokens (EOS included); the decoder's Limit caps them too.
	MaxNew int
	// EOS ends a request when drawn; < 0: none.
	EOS      int32
	Sampling Options
	// Static admits requests only when every slot is free, so a batch waits for its longest
	// row as batches without continuous batching do. The generations are the same; only the
	// time differs.
	Static bool
	// Finished, when set, is called with each request's index as it ends (for a progress
	// display).
	Finished func(request int)
}

// BatchStats counts the work of a GenerateBatch.
type BatchStats struct {
	Steps         int // decoder steps
	Prefills      int // prompts prefilled; a group admitted together counts one
	PrefillTokens int // tokens those prefills fed
	Forked        int // requests that got their prompt's cache by a fork instead of a prefill
	Decoded       int // sampled tokens fed back, one per row per step
	SlotSteps     int // slots times steps: Decoded + Prefills over it is the batch's occupancy
}

// GenerateBatch draws a completion for each request with d's rows as slots. Waiting requests
// take free slots in arrival order, each with the waiting requests of its group that fit; the
// group's prompt is prefilled on one slot (in the same step as the other rows' next tokens) and
// forked to the others, and requests of the group admitted later fork the prompt from a slot of
// the group still decoding, with the prompt's logits kept from its prefill. A request ends at
// cfg.EOS or its new-token cap and frees its slot for the next waiting request, so the batch
// decodes at full width until the work runs out (continuous batching). Each request draws from
// its own stream, so where the decoder computes a row the same whatever rows share its step (as
// the CPU backend does within each of its matrix-multiply paths), its tokens are the same bits
// for any slot count, arrival order and cfg.Static. Result is indexed by request.
func GenerateBatch(d RowDecoder, reqs []Request, cfg BatchConfig) (*Result, BatchStats, error) {
	b, err := newBatcher(d, reqs, cfg)
	if err != nil {
		return nil, BatchStats{}, err
	}
	for {
		if err := b.admit(); err != nil {
			return nil, b.stats, err
		}
		if len(b.free) == len(b.slot) {
			return b.res, b.stats, nil
		}
		if err := b.step(); err != nil {
			return nil, b.stats, err
		}
		if err := b.sample(); err != nil {
			return nil, b.stats, err
		}
	}
}

// batcher is the state of one GenerateBatch.
type batcher struct {
	d      RowDecoder
	reqs   []Request
	cfg    BatchConfig
	greedy bool
	res    *Result
	stats  BatchStats
	maxNew []int // per request

	queue []int   // waiting requests, in arrival order
	slot  []int   // the request on each slot, -1 when free
	free  []int   // free slots, ascending
	next  []int32 // per slot, the sampled token to feed at the next step; -1 after admission

	waiting map[int]int       // per group, its requests not yet admitted
	kept    map[int][]float32 // per group with requests waiting, its prompt's logits

	admitted []admission // this step's
	rows     []int       // this step's rows and their tokens
	toks     [][]int32
	logits   [][]float32 // per slot, the logits it picks from this step
	busy     []int       // the slots this step picks for
	us       []float64
	picks    []Pick
	pickers  []*Picker
}

// admission is a group's requests admitted together: the prompt goes on src, then forks to dst.
type admission struct {
	src int
	dst []int
}

func newBatcher(d RowDecoder, reqs []Request, cfg BatchConfig) (*batcher, error) {
	if err := cfg.Sampling.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxNew < 1 {
		return nil, fmt.Errorf("sample: at most %d new tokens; want >= 1", cfg.MaxNew)
	}
	S, n := d.Rows(), len(reqs)
	b := &batcher{d: d, reqs: reqs, cfg: cfg, greedy: cfg.Sampling.Temperature == 0, maxNew: make([]int, n),
		res: &Result{Tokens: make([][]int32, n), LogProbs: make([][]float32, n), Trunc: make([][]float32, n),
			Kept: make([][]int32, n), Cutoff: make([][]float32, n), Finished: make([]bool, n)},
		queue: make([]int, n), slot: make([]int, S), free: make([]int, S), next: make([]int32, S),
		waiting: map[int]int{}, kept: map[int][]float32{},
		logits: make([][]float32, S), us: make([]float64, S), picks: make([]Pick, S),
		pickers: make([]*Picker, max(1, min(runtime.GOMAXPROCS(0), S)))}
	if err := b.checkRequests(); err != nil {
		return nil, err
	}
	for i, q := range reqs {
		b.queue[i] = i
		b.waiting[q.Group]++
	}
	for s := range b.slot {
		b.slot[s], b.free[s] = -1, s
	}
	for w := range b.pickers {
		b.pickers[w] = &Picker{opt: cfg.Sampling}
	}
	return b, nil
}

// checkRequests refuses empty prompts, prompts that leave no room, groups whose prompts
// differ, missing streams and negative caps, and sets each request's new-token cap.
func (b *batcher) checkRequests() error {
	first := map[int]int{} // group -> its first request
	limit := b.d.Limit()
	for i, q := range b.reqs {
		switch {
		case len(q.Prompt) == 0:
			return fmt.Errorf("sample: request %d has an empty prompt", i)
		case len(q.Prompt) >= limit:
			return fmt.Errorf("sample: request %d: prompt of %d tokens leaves no room in a context of %d", i, len(q.Prompt), limit)
		case q.RNG == nil && !b.greedy:
			return fmt.Errorf("sample: request %d has no random stream", i)
		case q.MaxNew < 0:
			return fmt.Errorf("sample: request %d caps its new tokens at %d; want >= 1, or 0 for no cap of its own", i, q.MaxNew)
		}
		if f, ok := first[q.Group]; !ok {
			first[q.Group] = i
		} else if !slices.Equal(q.Prompt, b.reqs[f].Prompt) {
			return fmt.Errorf("sample: request %d of group %d has a prompt unlike request %d's; a group shares one prompt", i, q.Group, f)
		}
		b.maxNew[i] = min(b.cfg.MaxNew, limit-len(q.Prompt))
		if q.MaxNew > 0 {
			b.maxNew[i] = min(b.maxNew[i], q.MaxNew)
		}
	}
	return nil
}

// admit gives free slots to waiting requests: the first waiting one, with the later waiting
// requests of its group that fit, on the lowest free slots (consecutive slots at one position
// share the attention call), until no slot is free or no request waits. Static batching admits
// only into an empty batch.
func (b *batcher) admit() error {
	b.admitted = b.admitted[:0]
	if b.cfg.Static && len(b.free) < len(b.slot) {
		return nil
	}
	for len(b.free) > 0 && len(b.queue) > 0 {
		group := b.reqs[b.queue[0]].Group
		var members []int
		rest := b.queue[:0]
		for _, i := range b.queue {
			if b.reqs[i].Group == group && len(members) < len(b.free) {
				members = append(members, i)
			} else {
				rest = append(rest, i)
			}
		}
		b.queue = rest
		slots := b.free[:len(members)]
		for k, i := range members {
			b.slot[slots[k]] = i
			b.next[slots[k]] = -1
		}
		b.free = b.free[len(members):]
		if err := b.place(group, slices.Clone(slots)); err != nil {
			return err
		}
		if b.waiting[group] -= len(members); b.waiting[group] == 0 {
			delete(b.kept, group)
		}
	}
	return nil
}

// place gives the prompt of group to newly admitted slots: forked from a slot of the group
// still decoding, with the logits kept from the prompt's prefill, or else prefilled on the
// first slot at the next step and forked to the others after it.
func (b *batcher) place(group int, slots []int) error {
	P := len(b.reqs[b.slot[slots[0]]].Prompt)
	if logits, ok := b.kept[group]; ok {
		for s, i := range b.slot {
			if i >= 0 && b.next[s] >= 0 && b.reqs[i].Group == group {
				if err := b.d.ForkPrefix(s, P, slots); err != nil {
					return err
				}
				for _, t := range slots {
					b.logits[t] = logits
				}
				b.stats.Forked += len(slots)
				return nil
			}
		}
	}
	if err := b.d.ResetRow(slots[0]); err != nil {
		return err
	}
	b.admitted = append(b.admitted, admission{src: slots[0], dst: slots[1:]})
	return nil
}

// step feeds every decoding slot its sampled token and every group admitted by a prefill its
// prompt, in one decoder step, forks the prompts to the groups' other slots and keeps the
// prompt's logits of groups with requests still waiting; b.logits says where each slot's
// logits are.
func (b *batcher) step() error {
	b.rows, b.toks = b.rows[:0], b.toks[:0]
	for s, i := range b.slot {
		if i >= 0 && b.next[s] >= 0 {
			b.rows = append(b.rows, s)
			b.toks = append(b.toks, b.next[s:s+1])
			b.stats.Decoded++
		}
	}
	for _, a := range b.admitted {
		p := b.reqs[b.slot[a.src]].Prompt
		b.rows = append(b.rows, a.src)
		b.toks = append(b.toks, p)
		b.stats.Prefills++
		b.stats.PrefillTokens += len(p)
	}
	if len(b.rows) == 0 { // only slots that joined a group, which has logits kept
		return nil
	}
	logits, err := b.d.StepRagged(b.rows, b.toks)
	if err != nil {
		return err
	}
	b.stats.Steps++
	b.stats.SlotSteps += len(b.slot)
	stride := len(logits) / len(b.rows)
	for k, s := range b.rows {
		b.logits[s] = logits[k*stride : (k+1)*stride]
	}
	for _, a := range b.admitted {
		P := len(b.reqs[b.slot[a.src]].Prompt)
		if len(a.dst) > 0 {
			if err := b.d.ForkPrefix(a.src, P, a.dst); err != nil {
				return err
			}
		}
		for _, s := range a.dst {
			b.logits[s] = b.logits[a.src]
		}
		b.stats.Forked += len(a.dst)
		if g := b.reqs[b.slot[a.src]].Group; b.waiting[g] > 0 {
			b.kept[g] = slices.Clone(b.logits[a.src])
		}
	}
	return nil
}

// sample picks every running slot's next token from its row of logits and its request's
// stream, records it, and frees the slots whose request ended.
func (b *batcher) sample() error {
	row := func(s int) []float32 { return b.logits[s] }
	b.busy = b.busy[:0]
	V := b.d.VocabSize()
	for s, i := range b.slot {
		if i < 0 {
			continue
		}
		if err := CheckLogits(row(s), V); err != nil {
			return fmt.Errorf("sample: request %d, new token %d: %w", i, len(b.res.Tokens[i])+1, err)
		}
		if !b.greedy {
			b.us[s] = b.reqs[i].RNG.Float64()
		}
		b.busy = append(b.busy, s)
	}
	workers := min(len(b.pickers), len(b.busy))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for k := w; k < len(b.busy); k += workers {
				s := b.busy[k]
				b.picks[s] = b.pickers[w].Pick(row(s), V, b.us[s])
			}
		})
	}
	wg.Wait()
	for _, s := range b.busy {
		b.record(s, b.picks[s])
	}
	return nil
}

// record appends a slot's pick to its request and frees the slot when the request ended.
func (b *batcher) record(s int, pk Pick) {
	i, res := b.slot[s], b.res
	res.Tokens[i] = append(res.Tokens[i], pk.Token)
	res.LogProbs[i] = append(res.LogProbs[i], float32(pk.LogProb))
	res.Trunc[i] = append(res.Trunc[i], float32(pk.TruncLogProb))
	res.Kept[i] = append(res.Kept[i], int32(pk.Kept))
	res.Cutoff[i] = append(res.Cutoff[i], pk.Cutoff)
	eos := b.cfg.EOS >= 0 && pk.Token == b.cfg.EOS
	res.Finished[i] = eos
	if !eos && len(res.Tokens[i]) < b.maxNew[i] {
		b.next[s] = pk.Token
		return
	}
	b.slot[s] = -1
	if b.cfg.Finished != nil {
		b.cfg.Finished(i)
	}
	k, _ := slices.BinarySearch(b.free, s)
	b.free = slices.Insert(b.free, k, s)
}
