package rl

import (
	"fmt"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/rl/objective"
	"github.com/vkgrad/vkgrad/tensor"
)

// seqBatch lays prompt+completion rows out for a forward pass: rows right-padded to a common
// length, inputs = sequence[:-1], targets = sequence[1:], so the log-prob at flat index
// pos[i][j] is that of completion token j of row i given everything before it. Rows are split
// into micro-batches that run one forward each.
type seqBatch struct {
	N, W int
	mbs  []microBatch
	// at[i] locates row i: its micro-batch and its index inside it.
	at [][2]int
}

type microBatch struct {
	rows            []int
	B, T            int
	inputs, targets []int32
	pos             [][]int // per local row, flat index of completion position j (-1 past the row)
	// sel lists the flat positions of all completion tokens (row by row) and selTargets their
	// tokens: the only positions the lm head runs on. at[k][j] indexes sel (-1 past the row).
	sel        []int
	selTargets []int32
	// selCut are the sampler's cutoffs at sel (see Rollout.Cutoff), nil when the truncation is
	// not replayed.
	selCut []float32
	at     [][]int
	host   []float32
}

// newSeqBatch builds the batch for rows prompt[i] ++ completion[i][:lens[i]]. Padding holds
// pad, which the masks exclude. microRows caps the rows per forward (0: all in one). cutoffs
// (N x W, or nil) are the sampler's per-token cutoffs, replayed by the log-probs.
func newSeqBatch(prompts [][]int32, completions [][]int, lens []int, cutoffs [][]float32, pad int32, microRows, maxSeqLen int) (*seqBatch, error) {
	n := len(prompts)
	if n == 0 {
		return nil, fmt.Errorf("batch: no rows")
	}
	W := 0
	for _, c := range completions {
		W = max(W, len(c))
	}
	if cutoffs != nil && len(cutoffs) != n {
		return nil, fmt.Errorf("batch: %d rows of cutoffs for %d rows", len(cutoffs), n)
	}
	sb := &seqBatch{N: n, W: W, at: make([][2]int, n)}
	if microRows <= 0 || microRows > n {
		microRows = n
	}
	rows := batchRows{prompts: prompts, completions: completions, lens: lens, cutoffs: cutoffs, pad: pad, W: W}
	for start := 0; start < n; start += microRows {
		mb, err := rows.microBatch(start, min(start+microRows, n), maxSeqLen)
		if err != nil {
			return nil, err
		}
		for k, i := range mb.rows {
			sb.at[i] = [2]int{len(sb.mbs), k}
		}
		sb.mbs = append(sb.mbs, mb)
	}
	return sb, nil
}

// batchRows are the rows a seqBatch is built from (see newSeqBatch); W is the longest
// completion.
type batchRows struct {
	prompts     [][]int32
	completions [][]int
	lens        []int
	cutoffs     [][]float32
	pad         int32
	W           int
}

// microBatch lays out rows start..end-1 as one micro-batch.
func (r batchRows) microBatch(start, end, maxSeqLen int) (microBatch, error) {
	mb := microBatch{B: end - start}
	for i := start; i < end; i++ {
		mb.rows = append(mb.rows, i)
		if r.lens[i] < 1 {
			return microBatch{}, fmt.Errorf("batch: row %d has no completion token", i)
		}
		mb.T = max(mb.T, len(r.prompts[i])+r.lens[i]-1)
	}
	if mb.T > maxSeqLen {
		return microBatch{}, fmt.Errorf("batch: a row of %d positions exceeds the model's max_seq_len %d", mb.T, maxSeqLen)
	}
	mb.inputs = make([]int32, mb.B*mb.T)
	mb.targets = make([]int32, mb.B*mb.T)
	mb.pos = make([][]int, mb.B)
	mb.at = make([][]int, mb.B)
	for k, i := range mb.rows {
		r.layOut(&mb, k, i)
		if err := r.selectCompletion(&mb, k, i); err != nil {
			return microBatch{}, err
		}
	}
	mb.host = make([]float32, len(mb.sel))
	return mb, nil
}

// layOut writes row i, as local row k, into mb's inputs and targets, padded past its end.
func (r batchRows) layOut(mb *microBatch, k, i int) {
	seq := append(append([]int32(nil), r.prompts[i]...), make([]int32, r.lens[i])...)
	for j := 0; j < r.lens[i]; j++ {
		seq[len(r.prompts[i])+j] = int32(r.completions[i][j])
	}
	row := k * mb.T
	for t := 0; t < mb.T; t++ {
		mb.inputs[row+t], mb.targets[row+t] = r.pad, r.pad
		if t+1 < len(seq) {
			mb.inputs[row+t], mb.targets[row+t] = seq[t], seq[t+1]
		}
	}
}

// selectCompletion records where row i's (local row k's) completion tokens sit: their flat
// positions, their index in sel, their targets and, when replayed, their cutoffs.
func (r batchRows) selectCompletion(mb *microBatch, k, i int) error {
	row := k * mb.T
	mb.pos[k] = make([]int, r.W)
	mb.at[k] = make([]int, r.W)
	for j := range r.W {
		mb.pos[k][j], mb.at[k][j] = -1, -1
		if j >= r.lens[i] {
			continue
		}
		p := row + len(r.prompts[i]) - 1 + j
		mb.pos[k][j], mb.at[k][j] = p, len(mb.sel)
		mb.sel = append(mb.sel, p)
		mb.selTargets = append(mb.selTargets, mb.targets[p])
		if r.cutoffs != nil {
			if j >= len(r.cutoffs[i]) {
				return fmt.Errorf("batch: row %d has %d cutoffs for %d tokens", i, len(r.cutoffs[i]), r.lens[i])
			}
			mb.selCut = append(mb.selCut, r.cutoffs[i][j])
		}
	}
	return nil
}

// trainTokens returns, for every row and completion position, the target token the forward
// pass is trained on (pad past the row): compared with the rollout by objective.TokenAlignment.
func (sb *seqBatch) trainTokens(pad int) [][]int {
	out := make([][]int, sb.N)
	for i := range out {
		mb := &sb.mbs[sb.at[i][0]]
		out[i] = make([]int, sb.W)
		for j, p := range mb.pos[sb.at[i][1]] {
			out[i][j] = pad
			if p >= 0 {
				out[i][j] = int(mb.targets[p])
			}
		}
	}
	return out
}

// gather downloads a tensor over micro-batch mb's selected positions into rows of dst (N x W).
func (sb *seqBatch) gather(mb *microBatch, src *tensor.Tensor, dst [][]float64) error {
	if err := src.Backend().Download(mb.host, src); err != nil {
		return err
	}
	for k, i := range mb.rows {
		for j, p := range mb.at[k] {
			if p >= 0 {
				dst[i][j] = float64(mb.host[p])
			} else {
				dst[i][j] = 0
			}
		}
	}
	return nil
}

// scatter uploads rows of src (N x W), times scale, into a tensor over micro-batch mb's
// selected positions.
func (sb *seqBatch) scatter(mb *microBatch, src [][]float64, scale float32, dst *tensor.Tensor) error {
	clear(mb.host)
	for k, i := range mb.rows {
		for j, p := range mb.at[k] {
			if p >= 0 {
				mb.host[p] = float32(src[i][j]) * scale
			}
		}
	}
	return dst.Backend().Upload(dst, mb.host)
}

// seqOut are per-token outputs of a forward pass over a seqBatch, N x W on the host.
type seqOut struct {
	Logp, Entropy, Values [][]float64
}

func newSeqOut(n, w int, values bool) *seqOut {
	o := &seqOut{Logp: objective.Zeros(n, w), Entropy: objective.Zeros(n, w)}
	if values {
		o.Values = objective.Zeros(n, w)
	}
	return o
}

// model is a policy with the head that evaluates only the completion positions.
type model struct {
	nn.LM
	head nn.SelectedHead
}

func newModel(m nn.LM) *model { return &model{LM: m, head: m.NewSelectedHead()} }

// valuePass is how forwardMB runs the value head: none when head is nil; recorded on tape
// when set; with dropout when train, its masks drawn from seed; detach keeps the values'
// gradient out of the model.
type valuePass struct {
	head   *ValueHead
	tape   *autograd.Tape
	train  bool
	seed   uint64
	detach bool
}

// forwardMB runs m over micro-batch mb, recording on tp when it records, and returns the
// log-prob and entropy Vars at the temperature (under the sampler's truncation when mb carries
// cutoffs) over the selected positions, and the values there when v has a head.
func forwardMB(m *model, tp *autograd.Tape, mb *microBatch, temperature float64, v valuePass) (logp, ent, values *autograd.Var, err error) {
	if err := m.ForwardTrunk(tp, mb.inputs, mb.B, mb.T); err != nil {
		return nil, nil, nil, err
	}
	logp, ent, err = m.head.Forward(tp, mb.sel, mb.selTargets, mb.selCut, float32(temperature))
	if err != nil {
		return nil, nil, nil, err
	}
	if v.head != nil {
		values, err = v.head.Forward(v.tape, m.head.Hidden(len(mb.sel)), len(mb.sel), v.train, v.seed, v.detach)
		if err != nil {
			return nil, nil, nil, err
		}
	}
	return logp, ent, values, nil
}

// collect downloads a micro-batch's outputs into out.
func (sb *seqBatch) collect(mb *microBatch, out *seqOut, logp, ent, values *autograd.Var) error {
	if err := sb.gather(mb, logp.Value, out.Logp); err != nil {
		return err
	}
	if err := sb.gather(mb, ent.Value, out.Entropy); err != nil {
		return err
	}
	if values != nil && out.Values != nil {
		return sb.gather(mb, values.Value, out.Values)
	}
	return nil
}

// evalNoGrad runs every micro-batch without recording and collects the outputs; values use
// the head's dropout when train is set (mask seeds from seed).
func (sb *seqBatch) evalNoGrad(m *model, temperature float64, vh *ValueHead, train bool, seed func(mb int) uint64) (*seqOut, error) {
	out := newSeqOut(sb.N, sb.W, vh != nil)
	for b := range sb.mbs {
		mb := &sb.mbs[b]
		var s uint64
		if seed != nil {
			s = seed(b)
		}
		logp, ent, values, err := forwardMB(m, nil, mb, temperature, valuePass{head: vh, train: train, seed: s})
		if err != nil {
			return nil, err
		}
		if err := sb.collect(mb, out, logp, ent, values); err != nil {
			return nil, err
		}
	}
	return out, nil
}
