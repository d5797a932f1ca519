package backendtest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/vkgrad/vkgrad/tensor"
)

// ropeTable returns per position D/2 cosines then D/2 sines of position · 10000^(-2i/D).
func ropeTable(positions, D int) []float32 {
	out := make([]float32, positions*D)
	for p := range positions {
		for i := range D / 2 {
			a := float64(p) / math.Pow(10000, float64(2*i)/float64(D))
			out[p*D+i], out[p*D+D/2+i] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	return out
}

// LlamaCases are the ops of the Llama family (RMSNorm, RoPE, SwiGLU, embeddings, grouped-query
// packing), with the tolerances an independent float32 implementation meets.
func LlamaCases() []Case {
	r := rand.New(rand.NewPCG(21, 22))
	var cases []Case
	for _, s := range []struct{ N, C int }{{1, 1}, {3, 16}, {17, 300}, {40, 64}} {
		N, C := s.N, s.C
		f := map[string][]float32{"out": make([]float32, N*C), "rstd": make([]float32, N), "inp": Normals(r, N*C, 2, 0.3), "weight": Normals(r, C, 1, 1)}
		fwd := func(be tensor.Backend, x map[string]*tensor.Tensor) {
			be.RMSNormForward(x["out"], x["rstd"], x["inp"], x["weight"], N, C, 1e-6)
		}
		rstd := referenceOutput(f, nil, "rstd", fwd)
		rr := rand.New(rand.NewPCG(uint64(N), uint64(C))) // its own stream: the cases after keep theirs
		cases = append(cases, Case{
			Name: fmt.Sprintf("ResidualRMSNormForward/N=%d,C=%d", N, C),
			F: map[string][]float32{"residual": Normals(rr, N*C, 1, 0), "out": make([]float32, N*C), "rstd": make([]float32, N),
				"a": Normals(rr, N*C, 2, 0.3), "b": Normals(rr, N*C, 1, 0), "weight": f["weight"]},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.ResidualRMSNormForward(x["residual"], x["out"], x["rstd"], x["a"], x["b"], x["weight"], N, C, 1e-6)
			},
			Checks: []Check{{Name: "residual"}, {"out", 2e-5, 2e-5}, {"rstd", 0, 2e-5}}, Window: C,
		})
		cases = append(cases, Case{
			Name: fmt.Sprintf("RMSNormForward/N=%d,C=%d", N, C), F: f, Run: fwd,
			Checks: []Check{{"out", 2e-5, 2e-5}, {"rstd", 0, 2e-5}}, Window: C,
		}, Case{
			Name: fmt.Sprintf("RMSNormBackward/N=%d,C=%d", N, C),
			F: map[string][]float32{"dinp": Normals(r, N*C, 1, 0), "dweight": Normals(r, C, 1, 0), "dout": Normals(r, N*C, 1, 0),
				"inp": f["inp"], "weight": f["weight"], "rstd": rstd},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				for range 2 {
					be.RMSNormBackward(x["dinp"], x["dweight"], x["dout"], x["inp"], x["weight"], x["rstd"], N, C)
				}
			},
			Checks: []Check{{"dinp", 1e-4, 1e-5}, {"dweight", 2e-5 * float64(N), 1e-5}}, Window: 2 * C,
		})
	}
	// RoPE on packed q|k|v rows: 3 heads of q, 1 of k rotated, 1 of v copied; and a decode
	// step at position 5.
	for _, s := range []struct{ B, T, pos0, H, rot, D int }{{2, 7, 0, 5, 4, 8}, {1, 3, 5, 3, 2, 16}, {3, 1, 0, 2, 2, 2}} {
		N, rowLen := s.B*s.T, s.H*s.D
		table := ropeTable(s.pos0+s.T, s.D)
		cases = append(cases, Case{
			Name: fmt.Sprintf("RoPEForward/B=%d,T=%d,pos0=%d,H=%d,rot=%d,D=%d", s.B, s.T, s.pos0, s.H, s.rot, s.D),
			F:    map[string][]float32{"out": make([]float32, N*rowLen), "inp": Normals(r, N*rowLen, 1, 0), "table": table},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.RoPEForward(x["out"], x["inp"], x["table"], N, s.T, s.pos0, s.H, s.rot, rowLen)
			},
			Checks: []Check{{"out", 1e-6, 1e-6}}, Window: s.T * rowLen,
		}, Case{
			Name: fmt.Sprintf("RoPEBackward/B=%d,T=%d,pos0=%d,H=%d,rot=%d,D=%d", s.B, s.T, s.pos0, s.H, s.rot, s.D),
			F:    map[string][]float32{"dinp": Normals(r, N*rowLen, 1, 0), "dout": Normals(r, N*rowLen, 1, 0), "table": table},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				for range 2 {
					be.RoPEBackward(x["dinp"], x["dout"], x["table"], N, s.T, s.pos0, s.H, s.rot, rowLen)
				}
			},
			Checks: []Check{{"dinp", 2e-6, 2e-6}}, Window: s.T * rowLen,
		})
	}
	for _, n := range []int{1, 165, 6144} {
		gate := Normals(r, n, 3, 0)
		gate[0] = 30 // saturated gates
		gate[n-1] = -30
		up := Normals(r, n, 1, 0)
		cases = append(cases, Case{
			Name: fmt.Sprintf("SwiGLUForward/n=%d", n), F: map[string][]float32{"out": make([]float32, n), "gate": gate, "up": up},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.SwiGLUForward(x["out"], x["gate"], x["up"], n)
			},
			Checks: []Check{{"out", 2e-6, 2e-6}}, Window: 100,
		}, Case{
			Name: fmt.Sprintf("SwiGLUBackward/n=%d", n),
			F: map[string][]float32{"dgate": Normals(r, n, 1, 0), "dup": Normals(r, n, 1, 0), "gate": gate, "up": up,
				"dout": Normals(r, n, 1, 0)},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				for range 2 {
					be.SwiGLUBackward(x["dgate"], x["dup"], x["gate"], x["up"], x["dout"], n)
				}
			},
			Checks: []Check{{"dgate", 2e-6, 2e-6}, {"dup", 2e-6, 2e-6}}, Window: 100,
		})
	}
	for _, s := range []struct{ N, V, C int }{{1, 1, 1}, {9, 5, 16}, {50, 300, 24}} {
		tok := Tokens(r, s.N, s.V)
		tok[s.N-1] = tok[0] // a repeated token accumulates in row order
		cases = append(cases, Case{
			Name: fmt.Sprintf("EmbeddingForward/N=%d,V=%d,C=%d", s.N, s.V, s.C),
			F:    map[string][]float32{"out": make([]float32, s.N*s.C), "wte": Normals(r, s.V*s.C, 1, 0)}, I: map[string][]int32{"tokens": tok},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.EmbeddingForward(x["out"], x["tokens"], x["wte"], s.N, s.C)
			},
			Checks: []Check{{"out", 0, 0}}, Window: 2 * s.C,
		}, Case{
			Name: fmt.Sprintf("EmbeddingBackward/N=%d,V=%d,C=%d", s.N, s.V, s.C),
			F:    map[string][]float32{"dwte": Normals(r, s.V*s.C, 1, 0), "dout": Normals(r, s.N*s.C, 1, 0)}, I: map[string][]int32{"tokens": tok},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				for range 2 {
					be.EmbeddingBackward(x["dwte"], x["dout"], x["tokens"], s.N, s.C)
				}
			},
			Checks: []Check{{"dwte", 0, 0}}, Window: 2 * s.C,
		})
	}
	for _, s := range []struct{ N, H, KV, D int }{{1, 1, 1, 1}, {6, 6, 2, 8}, {9, 4, 1, 16}, {3, 3, 3, 5}} {
		qw, kw := s.H*s.D, s.KV*s.D
		cases = append(cases, Case{
			Name: fmt.Sprintf("PackQKV/N=%d,H=%d,KV=%d,D=%d", s.N, s.H, s.KV, s.D),
			F: map[string][]float32{"qkv": make([]float32, 3*s.N*qw), "q": Normals(r, s.N*qw, 1, 0),
				"k": Normals(r, s.N*kw, 1, 0), "v": Normals(r, s.N*kw, 1, 0)},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.PackQKV(x["qkv"], x["q"], x["k"], x["v"], s.N, s.H, s.KV, s.D)
			},
			Checks: []Check{{"qkv", 0, 0}}, Window: 3 * qw,
		}, Case{
			Name: fmt.Sprintf("PackQKVBackward/N=%d,H=%d,KV=%d,D=%d", s.N, s.H, s.KV, s.D),
			F: map[string][]float32{"dq": Normals(r, s.N*qw, 1, 0), "dk": Normals(r, s.N*kw, 1, 0), "dv": Normals(r, s.N*kw, 1, 0),
				"dqkv": Normals(r, 3*s.N*qw, 1, 0)},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				for range 2 {
					be.PackQKVBackward(x["dq"], x["dk"], x["dv"], x["dqkv"], s.N, s.H, s.KV, s.D)
				}
			},
			// The copies are summed in head order before being added, on both: the same bits.
			Checks: []Check{{"dq", 0, 0}, {"dk", 0, 0}, {"dv", 0, 0}}, Window: 3 * qw,
		})
	}
	return cases
}
