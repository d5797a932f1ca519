package episode

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/vkgrad/vkgrad/rl/env"
)

// byteTok is a tokenizer of bytes (ids 0-255) with one special token, "<eot>" (256).
type byteTok struct{}

const toyEOT = 256

func (byteTok) Encode(text string) []int32 {
	var ids []int32
	for len(text) > 0 {
		if strings.HasPrefix(text, "<eot>") {
			ids = append(ids, toyEOT)
			text = text[len("<eot>"):]
			continue
		}
		ids = append(ids, int32(text[0]))
		text = text[1:]
	}
	return ids
}

func (byteTok) Decode(ids []int32) (string, error) {
	var b strings.Builder
	for _, id := range ids {
		switch {
		case id == toyEOT:
			b.WriteString("<eot>")
		case id >= 0 && id < 256:
			b.WriteByte(byte(id))
		default:
			return "", fmt.Errorf("token %d outside the vocabulary", id)
		}
	}
	return b.String(), nil
}

// hashDecoder is a RowDecoder whose logits are a function of each row's history alone, so
// any schedule must give the same episodes; it keeps each row's history for the tests.
type hashDecoder struct {
	rows    [][]int32
	limit   int
	resets  int
	eotBias float32
}

const toyVocab, toyStride = 257, 260 // rows padded past the vocabulary, as real decoders pad

func newHashDecoder(rows, limit int) *hashDecoder {
	return &hashDecoder{rows: make([][]int32, rows), limit: limit, eotBias: 1.5}
}

func (d *hashDecoder) StepRagged(rows []int, tokens [][]int32) ([]float32, error) {
	out := make([]float32, len(rows)*toyStride)
	for k, r := range rows {
		if len(d.rows[r])+len(tokens[k]) > d.limit {
			return nil, fmt.Errorf("row %d: %d positions past the limit %d", r, len(d.rows[r])+len(tokens[k]), d.limit)
		}
		d.rows[r] = append(d.rows[r], tokens[k]...)
		h := fnv.New64a()
		for _, t := range d.rows[r] {
			_ = binary.Write(h, binary.LittleEndian, t)
		}
		g := rand.New(rand.NewPCG(h.Sum64(), 7))
		row := out[k*toyStride : (k+1)*toyStride]
		for v := range row {
			row[v] = float32(math.Inf(-1))
		}
		for v := 'a'; v <= 'z'; v++ {
			row[v] = float32(g.Float64())
		}
		row[toyEOT] = d.eotBias
	}
	return out, nil
}

func (d *hashDecoder) ForkPrefix(src, n int, dst []int) error {
	for _, r := range dst {
		d.rows[r] = append([]int32(nil), d.rows[src][:n]...)
	}
	return nil
}

func (d *hashDecoder) ResetRow(row int) error {
	d.rows[row] = nil
	d.resets++
	return nil
}

func (d *hashDecoder) Limit() int     { return d.limit }
func (d *hashDecoder) Rows() int      { return len(d.rows) }
func (d *hashDecoder) VocabSize() int { return toyVocab }

// scriptEnv answers by its sample number: every turn gets a tool reply and a reward of a
// quarter per turn; sample 0 is done after its third turn; seed 101's sample 1 fails at its second
// turn. It sleeps a little at random, so answers arrive in any order.
type scriptEnv struct {
	sample int
	seed   uint64
	closed *int
	mu     *sync.Mutex
}

func scriptFactory(closed *int, mu *sync.Mutex) env.Factory {
	return func() (env.Env, error) { return &scriptEnv{closed: closed, mu: mu}, nil }
}

func (e *scriptEnv) Reset(_ context.Context, _ json.RawMessage, seed uint64, sample int) (env.ResetResult, error) {
	e.sample, e.seed = sample, seed
	jitter()
	return env.ResetResult{Messages: []env.Message{{Role: "user", Content: fmt.Sprintf("task %d", seed)}}}, nil
}

func (e *scriptEnv) Step(_ context.Context, t env.Turn) (env.StepResult, error) {
	jitter()
	if e.seed == 101 && e.sample == 1 && t.Index == 1 {
		return env.StepResult{}, fmt.Errorf("the tool crashed")
	}
	return env.StepResult{Messages: []env.Message{{Role: "tool", Content: fmt.Sprintf("r%d", t.Index)}},
		Reward: 0.25 * float64(t.Index+1), Done: e.sample == 0 && t.Index == 2}, nil
}

func (e *scriptEnv) Close() error {
	e.mu.Lock()
	*e.closed++
	e.mu.Unlock()
	return nil
}

func jitter() { time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond) }
