package data

import (
	"fmt"
	"math"
)

// ValMode chooses where the validation tokens come from.
type ValMode int

const (
	// ValTail takes validation from the end of the stream.
	ValTail ValMode = iota
	// ValInterleaved takes evenly spaced blocks of ValBlock tokens throughout the stream, so
	// validation covers the whole corpus (with the sorted Go sources, not only the last
	// packages).
	ValInterleaved
)

func (m ValMode) String() string {
	switch m {
	case ValTail:
		return "tail"
	case ValInterleaved:
		return "interleaved"
	}
	return fmt.Sprintf("ValMode(%d)", int(m))
}

// LoaderConfig describes how a token stream is cut into batches.
type LoaderConfig struct {
	B, T      int // batch size and sequence length
	MaxT      int // the model's context length; T may not exceed it
	VocabSize int // every token id must be below it

	ValFraction float64 // share of tokens held out for validation, in [0, 1)
	ValMode     ValMode
	ValBlock    int // tokens per block with ValInterleaved; 0 means 16*T+1

	Seed      uint64 // decides the training order
	NoShuffle bool   // read training sequences in stream order

	Source string // names the data in error messages, e.g. the token file's path
}

// Loader yields batches of B sequences of T+1 consecutive tokens: inputs are the first T,
// targets the last T (inputs shifted by one). Sequences start every T tokens and never cross
// from one split into the other. An epoch visits every sequence once, in an order shuffled
// from the seed and the epoch number; a partial last batch is dropped.
type Loader struct {
	split   string
	tokens  []int32
	starts  []int // first token of each sequence
	b, t    int
	seed    uint64
	shuffle bool

	order []int32 // this epoch's sequence order
	epoch int
	batch int
	x, y  []int32
}

// LoaderState is a Loader's position, serialisable so a resumed run continues exactly. The
// other fields identify the loader it came from.
type LoaderState struct {
	Split     string `json:"split"`
	Epoch     int    `json:"epoch"`
	Batch     int    `json:"batch"` // batches already taken in this epoch
	Seed      uint64 `json:"seed"`
	Shuffle   bool   `json:"shuffle"`
	B         int    `json:"b"`
	T         int    `json:"t"`
	Sequences int    `json:"sequences"`
}

// NewLoaders validates tokens and the configuration and returns the training loader and,
// when ValFraction > 0, the validation loader (nil otherwise). Validation is never shuffled,
// so every evaluation sees the same batches.
func NewLoaders(tokens []int32, cfg LoaderConfig) (train, val *Loader, err error) {
	src := cfg.Source
	if src == "" {
		src = "tokens"
	}
	if err := cfg.check(src); err != nil {
		return nil, nil, err
	}
	if err := checkTokenIDs(tokens, cfg.VocabSize, src); err != nil {
		return nil, nil, err
	}
	trainSegs, valSegs, err := splitSegments(len(tokens), cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("data %s: %w", src, err)
	}
	train, err = newLoader("train", tokens, trainSegs, cfg, !cfg.NoShuffle)
	if err != nil {
		return nil, nil, fmt.Errorf("data %s: %w", src, err)
	}
	if cfg.ValFraction > 0 {
		if val, err = newLoader("validation", tokens, valSegs, cfg, false); err != nil {
			return nil, nil, fmt.Errorf("data %s: %w", src, err)
		}
	}
	return train, val, nil
}

// check refuses sizes, fractions and modes out of range; src names the data in errors.
func (cfg LoaderConfig) check(src string) error {
	switch {
	case cfg.B < 1:
		return fmt.Errorf("data %s: batch size B=%d must be at least 1", src, cfg.B)
	case cfg.MaxT < 1:
		return fmt.Errorf("data %s: model context length maxT=%d must be at least 1", src, cfg.MaxT)
	case cfg.T < 1 || cfg.T > cfg.MaxT:
		return fmt.Errorf("data %s: sequence length T=%d must be between 1 and the model's maxT=%d", src, cfg.T, cfg.MaxT)
	case cfg.VocabSize < 1:
		return fmt.Errorf("data %s: vocab size %d must be at least 1", src, cfg.VocabSize)
	case math.IsNaN(cfg.ValFraction) || cfg.ValFraction < 0 || cfg.ValFraction >= 1:
		return fmt.Errorf("data %s: validation fraction %v must be in [0, 1)", src, cfg.ValFraction)
	case cfg.ValMode != ValTail && cfg.ValMode != ValInterleaved:
		return fmt.Errorf("data %s: unknown validation mode %d", src, int(cfg.ValMode))
	}
	return nil
}

// checkTokenIDs refuses a token outside a vocabulary of vocab.
func checkTokenIDs(tokens []int32, vocab int, src string) error {
	for i, tok := range tokens {
		if tok < 0 || int(tok) >= vocab {
			return fmt.Errorf("data %s: token id %d at position %d is outside the vocabulary of %d (the model's vocabulary must cover its tokenizer's: choose a model or preset with the tokenizer's vocabulary, or data tokenised for this model)", src, tok, i, vocab)
		}
	}
	return nil
}

// segment is a half-open range of token positions.
type segment struct{ lo, hi int }

func splitSegments(n int, cfg LoaderConfig) (train, val []segment, err error) {
	if cfg.ValFraction == 0 {
		return []segment{{0, n}}, nil, nil
	}
	if cfg.ValMode == ValTail {
		nval := int(math.Round(cfg.ValFraction * float64(n)))
		return []segment{{0, n - nval}}, []segment{{n - nval, n}}, nil
	}
	block := cfg.ValBlock
	if block == 0 {
		block = 16*cfg.T + 1
	}
	if block < cfg.T+1 {
		return nil, nil, fmt.Errorf("validation block of %d tokens is shorter than one sequence of T+1=%d", block, cfg.T+1)
	}
	// Block i is validation when floor((i+1)f) > floor(i f): evenly spaced, a share f of blocks.
	// Neighbouring blocks of the same split merge, so no sequence start is lost at their seam.
	add := func(segs []segment, lo, hi int) []segment {
		if k := len(segs) - 1; k >= 0 && segs[k].hi == lo {
			segs[k].hi = hi
			return segs
		}
		return append(segs, segment{lo, hi})
	}
	f := cfg.ValFraction
	for i := 0; i*block < n; i++ {
		lo, hi := i*block, min((i+1)*block, n)
		if math.Floor(float64(i+1)*f) > math.Floor(float64(i)*f) {
			val = add(val, lo, hi)
		} else {
			train = add(train, lo, hi)
		}
	}
	return train, val, nil
}

func newLoader(split string, tokens []int32, segs []segment, cfg LoaderConfig, shuffle bool) (*Loader, error) {
	l := &Loader{split: split, tokens: tokens, b: cfg.B, t: cfg.T, seed: cfg.Seed, shuffle: shuffle}
	have := 0
	for _, s := range segs {
		have += s.hi - s.lo
		for p := s.lo; p+cfg.T+1 <= s.hi; p += cfg.T {
			l.starts = append(l.starts, p)
		}
	}
	if len(l.starts) < cfg.B {
		advice := "more data, or a smaller batch or sequence length"
		if split == "validation" {
			advice = "a larger validation share (--val-fraction), or 0 for none"
		}
		return nil, fmt.Errorf("%s split has %d tokens, %d sequences of T+1=%d; one batch of B=%d needs %d sequences (at least %d consecutive tokens): use %s",
			split, have, len(l.starts), cfg.T+1, cfg.B, cfg.B, cfg.B*cfg.T+1, advice)
	}
	if len(l.starts) > math.MaxInt32 {
		return nil, fmt.Errorf("%s split has %d sequences, more than %d", split, len(l.starts), math.MaxInt32)
	}
	l.x = make([]int32, cfg.B*cfg.T)
	l.y = make([]int32, cfg.B*cfg.T)
	l.order = make([]int32, len(l.starts))
	l.setEpoch(0)
	return l, nil
}

// Next returns the next batch, inputs and targets each B*T ids in row-major (B,T) order.
// The slices are reused by the next call.
func (l *Loader) Next() (inputs, targets []int32) {
	for r := range l.b {
		p := l.starts[l.order[l.batch*l.b+r]]
		copy(l.x[r*l.t:(r+1)*l.t], l.tokens[p:p+l.t])
		copy(l.y[r*l.t:(r+1)*l.t], l.tokens[p+1:p+l.t+1])
	}
	l.batch++
	if l.batch == l.BatchesPerEpoch() {
		l.setEpoch(l.epoch + 1)
	}
	return l.x, l.y
}

// BatchesPerEpoch is the number of full batches in one pass over the split.
func (l *Loader) BatchesPerEpoch() int { return len(l.starts) / l.b }

// Epoch is the number of completed passes.
func (l *Loader) Epoch() int { return l.epoch }

// Sequences is the number of T+1 windows in the split.
func (l *Loader) Sequences() int { return len(l.starts) }

// Reset goes back to the first batch of epoch 0.
func (l *Loader) Reset() { l.setEpoch(0) }

// State returns the loader's position.
func (l *Loader) State() LoaderState {
	return LoaderState{Split: l.split, Epoch: l.epoch, Batch: l.batch, Seed: l.seed, Shuffle: l.shuffle,
		B: l.b, T: l.t, Sequences: len(l.starts)}
}

// Restore moves the loader to a saved position. It fails when the state came from a loader
// over different data or settings, where the same position would mean different batches.
func (l *Loader) Restore(s LoaderState) error {
	cur := l.State()
	switch {
	case s.Split != cur.Split:
		return fmt.Errorf("loader state: split %q, this loader is %q", s.Split, cur.Split)
	case s.Seed != cur.Seed:
		return fmt.Errorf("loader state: seed %d, this loader has %d", s.Seed, cur.Seed)
	case s.Shuffle != cur.Shuffle:
		return fmt.Errorf("loader state: shuffle %v, this loader has %v", s.Shuffle, cur.Shuffle)
	case s.B != cur.B || s.T != cur.T:
		return fmt.Errorf("loader state: B=%d T=%d, this loader has B=%d T=%d", s.B, s.T, cur.B, cur.T)
	case s.Sequences != cur.Sequences:
		return fmt.Errorf("loader state: %d sequences, this loader has %d (the data changed)", s.Sequences, cur.Sequences)
	case s.Epoch < 0 || s.Batch < 0 || s.Batch >= l.BatchesPerEpoch():
		return fmt.Errorf("loader state: epoch %d batch %d is outside 0..%d batches per epoch", s.Epoch, s.Batch, l.BatchesPerEpoch()-1)
	}
	l.setEpoch(s.Epoch)
	l.batch = s.Batch
	return nil
}

func (l *Loader) setEpoch(e int) {
	l.epoch, l.batch = e, 0
	for i := range l.order {
		l.order[i] = int32(i)
	}
	if !l.shuffle {
		return
	}
	r := rng{state: l.seed ^ 0x9e3779b97f4a7c15*uint64(e+1)}
	r.next() // decorrelate nearby seeds
	for i := len(l.order) - 1; i > 0; i-- {
		j := r.intn(uint64(i + 1))
		l.order[i], l.order[j] = l.order[j], l.order[i]
	}
}

// rng is splitmix64: tiny, and its sequence is fixed by its definition, so shuffles never
// change with the Go version.
type rng struct{ state uint64 }

func (r *rng) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn is uniform in [0, n), rejecting the top partial range so there is no modulo bias.
func (r *rng) intn(n uint64) uint64 {
	limit := math.MaxUint64 - math.MaxUint64%n
	for {
		if v := r.next(); v < limit {
			return v % n
		}
	}
}
