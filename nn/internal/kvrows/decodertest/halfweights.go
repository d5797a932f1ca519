package decodertest

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// HalfCounter is a CPU backend that counts its products with bfloat16 weight copies.
type HalfCounter struct {
	*cpu.Backend
	Calls int
}

// MatMulHalf counts the call and runs the CPU's.
func (b *HalfCounter) MatMulHalf(out, a *tensor.Tensor, w tensor.HalfWeight, bias *tensor.Tensor, p tensor.MatMulParams) {
	b.Calls++
	b.Backend.MatMulHalf(out, a, w, bias, p)
}

// ResettableDecoder is a Decoder with Reset.
type ResettableDecoder interface {
	Decoder
	Reset()
}

// HalfModel is what HalfWeightsMatch needs of a model on a HalfCounter in BF16 precision.
type HalfModel struct {
	Backend *HalfCounter
	// NewDecoder opens a decoder; it must take the backend's product precision as it is.
	NewDecoder func(B, limit int) (ResettableDecoder, error)
	// CopyBytes is the memory of the weight copies a decoder holds, and ModelCopyBytes what
	// the model reports them to take.
	CopyBytes      func(d ResettableDecoder) int64
	ModelCopyBytes int64
	// Perturb changes every weight.
	Perturb func(t *testing.T)
	// TrunkProducts is the number of products by a weight matrix in one step over its tokens;
	// the lm head's is one more, over the rows.
	TrunkProducts int
	Width         int // logits per row
	Vocab         int
}

// HalfWeightsMatch checks a decoder holding bfloat16 weight copies against one made in fp32
// precision (which holds none), both stepping in BF16: the logits agree bit for bit over a
// prefill and four single-token steps, for 1 and 3 rows; steps of at most 16 tokens read the
// copies (every product; the lm head's, over the rows, always does here) and longer ones the
// float32 weights. After the weights change, a
// Reset decoder gives a new decoder's logits bit for bit, and they differ from the old ones.
func HalfWeightsMatch(t *testing.T, m HalfModel) {
	be := m.Backend
	const prompt, steps = 7, 4
	setPrecision := func(p tensor.Precision) {
		if err := be.SetProductPrecision(p); err != nil {
			t.Fatal(err)
		}
	}
	openIn := func(p tensor.Precision, B int) ResettableDecoder {
		setPrecision(p)
		d, err := m.NewDecoder(B, prompt+steps)
		setPrecision(tensor.BF16)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		return d
	}
	// run feeds each row the prompt and then steps tokens, returning every step's logits and
	// checking that the copies are read exactly when a step has at most 16 tokens.
	run := func(d ResettableDecoder, B int, copies bool) [][]float32 {
		var out [][]float32
		for s := 0; s <= steps; s++ {
			Tq := 1
			if s == 0 {
				Tq = prompt
			}
			toks := make([]int32, B*Tq)
			for i := range toks {
				toks[i] = int32((7*i + 3*s + 1) % m.Vocab)
			}
			before := be.Calls
			logits, err := d.Step(toks, Tq)
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if copies {
				want = 1 // the head
				if B*Tq <= 16 {
					want += m.TrunkProducts
				}
			}
			if got := be.Calls - before; got != want {
				t.Fatalf("B=%d step %d of %d tokens: %d products with weight copies, want %d", B, s, B*Tq, got, want)
			}
			out = append(out, append([]float32(nil), logits[:B*m.Width]...))
		}
		return out
	}
	same := func(what string, got, want [][]float32) {
		t.Helper()
		for s := range want {
			for i := range want[s] {
				if math.Float32bits(got[s][i]) != math.Float32bits(want[s][i]) {
					t.Fatalf("%s: step %d logit %d = %v, want %v", what, s, i, got[s][i], want[s][i])
				}
			}
		}
	}
	setPrecision(tensor.BF16)
	if _, ok := tensor.HalfWeightsFor(be); !ok {
		t.Skip("this build's CPU kernel reads no bfloat16 weights in place (purego or arm64): decoders keep the float32 weights")
	}
	for _, B := range []int{1, 3} {
		plain, half := openIn(tensor.FP32, B), openIn(tensor.BF16, B)
		if got := m.CopyBytes(plain); got != 0 {
			t.Fatalf("a decoder made in fp32 holds %d bytes of weight copies", got)
		}
		if got := m.CopyBytes(half); got <= 0 || got != m.ModelCopyBytes {
			t.Fatalf("a decoder made in bf16 holds %d bytes of weight copies, the model says %d", got, m.ModelCopyBytes)
		}
		same("copies against float32 weights", run(half, B, true), run(plain, B, false))
	}
	d := openIn(tensor.BF16, 1)
	old := run(d, 1, true)
	m.Perturb(t)
	d.Reset()
	reset := run(d, 1, true)
	same("a Reset decoder after a weight update against a new one", reset, run(openIn(tensor.BF16, 1), 1, true))
	same("a Reset decoder after a weight update against float32 weights", reset, run(openIn(tensor.FP32, 1), 1, false))
	for i := range old[0] {
		if old[0][i] != reset[0][i] {
			return
		}
	}
	t.Fatal("the weight update left the logits as they were")
}
