package llama

import (
	"fmt"
	"math"
)

// reference is a plain float64 forward of the Llama family, written from the computation in
// the fixtures' README, to check that config and weights are read as Hugging Face reads them.
type reference struct {
	cfg Config
	w   map[string]Tensor
}

func (r reference) mat(name string) ([]float64, int, int) {
	t := r.w[name]
	out := make([]float64, len(t.Data))
	for i, v := range t.Data {
		out[i] = float64(v)
	}
	if len(t.Shape) == 1 {
		return out, t.Shape[0], 1
	}
	return out, t.Shape[0], t.Shape[1]
}

// linear returns x (n×in) times Wᵀ (W out×in), plus the bias when the model has it.
func (r reference) linear(x []float64, n int, weight, bias string) []float64 {
	w, out, in := r.mat(weight)
	y := make([]float64, n*out)
	for i := range n {
		for o := range out {
			var s float64
			for k := range in {
				s += x[i*in+k] * w[o*in+k]
			}
			y[i*out+o] = s
		}
	}
	if _, ok := r.w[bias]; ok {
		b, _, _ := r.mat(bias)
		for i := range n {
			for o := range out {
				y[i*out+o] += b[o]
			}
		}
	}
	return y
}

// rmsnorm normalises each row of width d in place with weight w.
func (r reference) rmsnorm(x []float64, d int, weight string) {
	w, _, _ := r.mat(weight)
	for i := 0; i < len(x); i += d {
		var ss float64
		for _, v := range x[i : i+d] {
			ss += v * v
		}
		inv := 1 / math.Sqrt(ss/float64(d)+r.cfg.RMSNormEps)
		for j := range d {
			x[i+j] = w[j] * x[i+j] * inv
		}
	}
}

// rope rotates each head (width D) of x (T rows of heads·D) by its position, rotate-half style.
func (r reference) rope(x []float64, T, heads int) {
	D := r.cfg.HeadDim
	inv := r.cfg.InvFreq()
	for t := range T {
		for h := range heads {
			v := x[(t*heads+h)*D:]
			for i := range D / 2 {
				a := float64(t) * inv[i]
				c, s := math.Cos(a), math.Sin(a)
				x0, x1 := v[i], v[i+D/2]
				v[i], v[i+D/2] = x0*c-x1*s, x1*c+x0*s
			}
		}
	}
}

// logits runs one sequence and returns T×V logits.
func (r reference) logits(ids []int) []float64 {
	c := r.cfg
	T, C, D, H, KV := len(ids), c.Hidden, c.HeadDim, c.Heads, c.KVHeads
	emb, _, _ := r.mat("model.embed_tokens.weight")
	x := make([]float64, T*C)
	for t, id := range ids {
		copy(x[t*C:(t+1)*C], emb[id*C:(id+1)*C])
	}
	for l := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		h := append([]float64(nil), x...)
		r.rmsnorm(h, C, p+"input_layernorm.weight")
		q := r.linear(h, T, p+"self_attn.q_proj.weight", p+"self_attn.q_proj.bias")
		k := r.linear(h, T, p+"self_attn.k_proj.weight", p+"self_attn.k_proj.bias")
		v := r.linear(h, T, p+"self_attn.v_proj.weight", p+"self_attn.v_proj.bias")
		if c.QKNorm {
			r.rmsnorm(q, D, p+"self_attn.q_norm.weight")
			r.rmsnorm(k, D, p+"self_attn.k_norm.weight")
		}
		r.rope(q, T, H)
		r.rope(k, T, KV)
		y := make([]float64, T*H*D)
		for hd := range H {
			g := hd / (H / KV)
			for tq := range T {
				scores := make([]float64, tq+1)
				mx := math.Inf(-1)
				for tk := range tq + 1 {
					var s float64
					for i := range D {
						s += q[(tq*H+hd)*D+i] * k[(tk*KV+g)*D+i]
					}
					scores[tk] = s / math.Sqrt(float64(D))
					mx = max(mx, scores[tk])
				}
				var z float64
				for tk := range scores {
					scores[tk] = math.Exp(scores[tk] - mx)
					z += scores[tk]
				}
				for tk, s := range scores {
					for i := range D {
						y[(tq*H+hd)*D+i] += s / z * v[(tk*KV+g)*D+i]
					}
				}
			}
		}
		o := r.linear(y, T, p+"self_attn.o_proj.weight", "")
		for i := range x {
			x[i] += o[i]
		}
		h = append(h[:0], x...)
		r.rmsnorm(h, C, p+"post_attention_layernorm.weight")
		gate := r.linear(h, T, p+"mlp.gate_proj.weight", "")
		up := r.linear(h, T, p+"mlp.up_proj.weight", "")
		for i, gv := range gate {
			gate[i] = gv / (1 + math.Exp(-gv)) * up[i]
		}
		down := r.linear(gate, T, p+"mlp.down_proj.weight", "")
		for i := range x {
			x[i] += down[i]
		}
	}
	r.rmsnorm(x, C, "model.norm.weight")
	head := "lm_head.weight"
	if c.TieEmbeddings {
		head = "model.embed_tokens.weight"
	}
	return r.linear(x, T, head, "")
}
