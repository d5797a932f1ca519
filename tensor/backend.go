package tensor

// Backend runs tensor operations on one device. Operations are coarse and fused, the way llm.c's
// kernels are: on a GPU every op is a dispatch and on a CPU every op is a pass over memory.
//
// Conventions every implementation follows:
//   - Dimensions are passed explicitly; tensors are dense row-major views and an op reads and
//     writes exactly the elements its dimensions describe, starting at each view's offset.
//   - Forward ops overwrite their outputs. Backward ops ACCUMULATE (+=) into every gradient they
//     write, so a tape can run them in reverse over shared gradients (residuals, tied weights).
//     Scratch arguments are overwritten.
//   - Ops may be queued; errors from queued work (device lost, ...) are returned by Sync and by
//     the next Download. Ops panic only on programming errors (wrong sizes or dtypes), never on
//     user input, which the callers validate.
//   - Results are deterministic: the same inputs on the same backend give bitwise-equal outputs.
//
// Its methods read as two lists: Memory (storage and transfers) and Kernels (the operations).
type Backend interface {
	Memory
	Kernels
}

// Memory is the part of a Backend that owns storage and moves data to and from the host.
type Memory interface {
	// Name identifies the backend and device, e.g. "cpu" or "vulkan:0 (NVIDIA H100)".
	Name() string

	// Alloc returns zero-filled storage for n elements.
	Alloc(dtype DType, n int) (Storage, error)
	// Free releases storage early; storage not freed is reclaimed with the backend. Queued ops
	// that still use the storage complete normally: a device backend defers the release.
	Free(s Storage)
	// Upload copies host values into a tensor of matching size.
	Upload(dst *Tensor, src []float32) error
	UploadInt32(dst *Tensor, src []int32) error
	// Download waits for queued work and copies a tensor into a host slice of matching size.
	Download(dst []float32, src *Tensor) error
	DownloadInt32(dst []int32, src *Tensor) error
	// Sync waits until all queued work has finished.
	Sync() error
	// Close releases the backend's device (and its memory); the backend is not used afterwards.
	Close() error
}

// Kernels are a Backend's operations (see Backend for the conventions they follow).
type Kernels interface {
	// Fill sets every element of x to v.
	Fill(x *Tensor, v float32)
	// Copy copies src into dst (same size; float32 or int32).
	Copy(dst, src *Tensor)
	// Add sets out = a + b elementwise (out may alias a or b).
	Add(out, a, b *Tensor)
	// Mul sets out = a * b elementwise (out may alias a or b).
	Mul(out, a, b *Tensor)
	// Axpy sets y += alpha * x.
	Axpy(y *Tensor, alpha float32, x *Tensor)
	// Scale sets x *= s.
	Scale(x *Tensor, s float32)
	// Sum sets out[0] = sum of x (a one-element tensor, so the result can stay on the device).
	Sum(out, x *Tensor)
	// SumSquares sets out[0] = sum of x*x over all of x (for global-norm clipping).
	SumSquares(out, x *Tensor)

	// MatMul computes out = op(a) @ op(b) (+ bias) for p.Batch independent matrices, where
	// op(a) is (M,K) and op(b) is (K,N). A is stored (M,K), or (K,M) when p.TransA; B is stored
	// (K,N), or (N,K) when p.TransB. bias may be nil, else it has N elements added to every
	// row. With p.Accumulate the product (and bias, when given) is added to out instead of
	// overwriting it. With p.GeluOut set, GeluForward of the finished out (batch*M*N
	// elements, GeluForward's bits) also goes there in the same pass: the MLP's fc, bias and
	// GELU. GeluOut is either out itself (GELU in place) or overlaps no operand.
	// Batch strides are M*K, K*N and M*N elements.
	MatMul(out, a, b, bias *Tensor, p MatMulParams)
	// BiasBackward accumulates dbias[j] += sum over the N rows of dout[i, j], dout (N, C).
	BiasBackward(dbias, dout *Tensor, N, C int)

	// LayerNormForward normalises each of N rows of C values: out = (x-mean)*rstd*w + b, with
	// eps 1e-5, saving mean and rstd (N each) for the backward.
	LayerNormForward(out, mean, rstd, inp, weight, bias *Tensor, N, C int)
	// ResidualLayerNormForward sets residual = a + b and then LayerNormForward of residual, in
	// one pass (the bits of Add followed by LayerNormForward). residual may be a (in place)
	// and out may be b.
	ResidualLayerNormForward(residual, out, mean, rstd, a, b, weight, bias *Tensor, N, C int)
	// LayerNormBackward accumulates into dinp, dweight and dbias.
	LayerNormBackward(dinp, dweight, dbias, dout, inp, weight, mean, rstd *Tensor, N, C int)

	// GeluForward applies GELU with the tanh approximation elementwise.
	GeluForward(out, inp *Tensor)
	// GeluBackward accumulates dinp += gelu'(inp) * dout.
	GeluBackward(dinp, inp, dout *Tensor)

	// AttentionSaved is the number of elements of the att state AttentionForward saves for the
	// backward and of the scratch AttentionBackward uses, for B sequences of T with NH heads.
	AttentionSaved(B, T, NH int) (att, scratch int)
	// AttentionForward runs fused causal multi-head attention (scale 1/sqrt(C/NH)). qkv is
	// (B,T,3C) holding q, k, v (each C = NH heads of C/NH); out is (B,T,C); att receives what
	// the backward needs, in a backend's own layout (AttentionSaved's size).
	AttentionForward(out, att, qkv *Tensor, B, T, C, NH int)
	// AttentionBackward accumulates into dqkv (B,T,3C), given the forward's qkv, out and att.
	// scratch has AttentionSaved's size.
	AttentionBackward(dqkv, scratch, dout, qkv, out, att *Tensor, B, T, C, NH int)
	// AttentionDecode is inference attention with a KV cache. qkv (B,Tq,3C) holds the q, k, v of
	// Tq new positions pos..pos+Tq-1; their k and v are written into kcache and vcache
	// (B,maxT,C each) at those positions, then each new query attends causally over cache
	// positions 0..its own. out is (B,Tq,C).
	AttentionDecode(out, kcache, vcache, qkv *Tensor, B, Tq, pos, maxT, C, NH int)

	// EncoderForward sets out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]; tokens is int32 (B,T).
	EncoderForward(out, tokens, wte, wpe *Tensor, B, T, C int)
	// EncoderBackward accumulates dwte[tokens[b,t],:] += dout[b,t,:] and dwpe[t,:] += dout[b,t,:].
	EncoderBackward(dwte, dwpe, dout, tokens *Tensor, B, T, C int)

	// CrossEntropyForward computes, for each of N rows of Vp logits, the softmax over the
	// first V into probs (N,Vp; padded entries 0) and losses[i] = -log probs[i, targets[i]].
	// targets is int32 (N).
	CrossEntropyForward(losses, probs, logits, targets *Tensor, N, V, Vp int)
	// CrossEntropyBackward accumulates dlogits[i,v] += (probs[i,v] - [v==targets[i]]) * dlosses[i]
	// for v < V; padded columns are untouched.
	CrossEntropyBackward(dlogits, probs, targets, dlosses *Tensor, N, V, Vp int)
	// CrossEntropyFused is the forward and the backward at once for a loss whose gradient is
	// dloss on every row (a mean): losses as CrossEntropyForward computes them, and
	// dlogits[i,v] = (p[i,v] - [v==targets[i]]) * dloss for v < V, 0 in padded columns
	// (written, not added). No probabilities are kept; the bits are those of the forward and
	// a backward into zeroed dlogits.
	CrossEntropyFused(losses, dlogits, logits, targets *Tensor, N, V, Vp int, dloss float32)

	// LogSoftmaxGather computes, for each of N rows of Vp logits and z = logits[:V]/temperature
	// (temperature positive and finite),
	// logp[i] = log_softmax(z)[targets[i]] and, when entropy is not nil, entropy[i] = -sum p log p.
	// cutoff, when not nil, is float32 (N) and truncates each row's distribution the way a top-k
	// or top-p sampler does: the softmax of row i runs over the kept set
	// K_i = {v < V : logits[i,v] >= cutoff[i]} ∪ {targets[i]} (raw logits, before the
	// temperature; -Inf keeps every column, NaN is invalid). Columns outside K_i have probability
	// exactly 0, add nothing to the entropy and receive no gradient. The target is always kept,
	// so its log-prob stays finite when rounding moves its logit just under the cutoff.
	LogSoftmaxGather(logp, entropy, logits, targets, cutoff *Tensor, N, V, Vp int, temperature float32)
	// LogSoftmaxGatherBackward accumulates into dlogits (N,Vp) the gradient of
	// sum_i dlogp[i]*logp[i] + dentropy[i]*entropy[i] under the same (optionally truncated)
	// distribution; cutoff and dentropy may be nil.
	LogSoftmaxGatherBackward(dlogits, logits, targets, cutoff, dlogp, dentropy *Tensor, N, V, Vp int, temperature float32)

	// RMSNormForward normalises each of N rows of C values: out = w * x * rstd with
	// rstd = 1/sqrt(mean(x²) + eps), saving rstd (N) for the backward.
	RMSNormForward(out, rstd, inp, weight *Tensor, N, C int, eps float32)
	// ResidualRMSNormForward sets residual = a + b and then RMSNormForward of residual, in one
	// pass (the bits of Add followed by RMSNormForward). residual may be a (in place) and out
	// may be b.
	ResidualRMSNormForward(residual, out, rstd, a, b, weight *Tensor, N, C int, eps float32)
	// RMSNormBackward accumulates into dinp and dweight; dweight may be nil (a frozen weight).
	RMSNormBackward(dinp, dweight, dout, inp, weight, rstd *Tensor, N, C int)
	// RoPEForward applies rotary position embeddings in Hugging Face's rotate-half layout to N
	// rows of rowLen values, each H heads of D = rowLen/H: the first rotHeads heads of row r are
	// rotated at position pos0 + r%T, pairing element i with i+D/2 (out_i = x_i cos - x_{i+D/2}
	// sin, out_{i+D/2} = x_{i+D/2} cos + x_i sin), and the remaining heads copied. table holds,
	// per position, D/2 cosines then D/2 sines, for positions 0 .. pos0+T-1 at least.
	RoPEForward(out, inp, table *Tensor, N, T, pos0, H, rotHeads, rowLen int)
	// RoPEBackward accumulates into dinp the gradient through RoPEForward (the inverse rotation).
	RoPEBackward(dinp, dout, table *Tensor, N, T, pos0, H, rotHeads, rowLen int)
	// SwiGLUForward sets out = silu(gate) * up elementwise over n values, silu(g) = g·σ(g).
	SwiGLUForward(out, gate, up *Tensor, n int)
	// SwiGLUBackward accumulates into dgate and dup.
	SwiGLUBackward(dgate, dup, gate, up, dout *Tensor, n int)
	// PackQKV lays out grouped-query attention's projections for AttentionForward: row r of
	// qkv (N, 3·H·D) is q[r] (H heads of D), then the KV heads of k[r] and of v[r] (KV heads
	// each) repeated so that query head h finds KV head h/(H/KV) at its own index.
	PackQKV(qkv, q, k, v *Tensor, N, H, KV, D int)
	// PackQKVBackward accumulates dqkv into dq, dk and dv, each KV head summing its H/KV
	// copies in head order.
	PackQKVBackward(dq, dk, dv, dqkv *Tensor, N, H, KV, D int)
	// EmbeddingForward sets out[r,:] = wte[tokens[r],:] for N rows; tokens is int32 (N).
	EmbeddingForward(out, tokens, wte *Tensor, N, C int)
	// EmbeddingBackward accumulates dwte[tokens[r],:] += dout[r,:].
	EmbeddingBackward(dwte, dout, tokens *Tensor, N, C int)

	// Dropout sets mask[i] = 0 or 1/(1-p) from a counter-based hash of (seed, i), identical on
	// every backend, and out = inp * mask.
	Dropout(out, mask, inp *Tensor, p float32, seed uint64)

	// AdamW updates params in place with llm.c's AdamW: m = b1 m + (1-b1) g, v = b2 v + (1-b2) g²,
	// p -= lr (m̂/(sqrt(v̂)+eps) + wd p), with m̂ and v̂ bias-corrected at step p.Step (from 1).
	// When p.GradSumSq is not nil it holds the sum of squared gradients and the gradient is
	// first scaled by min(1, MaxNorm/(sqrt(sumsq)+1e-6)) (global-norm clipping on the device);
	// grads itself is left unscaled.
	AdamW(params, grads, m, v *Tensor, p AdamWParams)
}

// AllocLimiter is implemented by backends whose single allocations are bounded (a GPU driver's
// maxMemoryAllocationSize): callers spread large buffers over several allocations.
type AllocLimiter interface {
	// MaxAllocElems is the most float32 elements one allocation may hold.
	MaxAllocElems() int
}

// MatMulParams describes a (batched) matrix product; see Backend.MatMul.
type MatMulParams struct {
	M, N, K        int
	TransA, TransB bool
	Accumulate     bool
	Batch          int     // 0 or 1: a single product
	GeluOut        *Tensor // when set, also receives GELU of the (finished) product
}

// AdamWParams are the hyper-parameters of one AdamW step; see Backend.AdamW.
type AdamWParams struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32
	Step                               int // 1-based
	GradSumSq                          *Tensor
	MaxNorm                            float32
}

// Profiler is a backend that times its own kernels (both backends are): SetProfiling starts a
// fresh profile or stops it, and KernelProfile returns one row per kernel (name, calls, total
// and mean time, and where known the achieved GFLOP/s and GB/s).
type Profiler interface {
	SetProfiling(on bool)
	KernelProfile() []map[string]any
}
