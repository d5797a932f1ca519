package vk

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/tensor/backendtest"
)

// attnKinds are the kinds of attention kernels; a device runs one of them, tests force each.
var attnKinds = []string{"flash", "broadcast", attnFlashRB}

// attnPassKernels are the kernels each kind runs for the forward, query and key passes, by
// the prefix of their shaders' names.
var attnPassKernels = map[string][3]string{
	"flash":     {"attention_flash_forward", "attention_flash_query", "attention_flash_key"},
	"broadcast": {"attention_broadcast_forward", "attention_broadcast_query", "attention_broadcast_key"},
	attnFlashRB: {"attention_flash_rb_forward", "attention_flash_rb_query", "attention_flash_rb_key"},
}

// forceAttention makes the backends of the rest of the test run the given kind of attention
// kernels.
func forceAttention(t *testing.T, kind string) {
	attnForce = kind
	t.Cleanup(func() { attnForce = "" })
}

// TestAttentionParityOfEachKind runs the attention parity cases (forward, two backwards,
// repeated and chunked, against the CPU backend) with each kind of kernel forced: the device's
// own kind also runs in TestNNParityWithCPU, the other one only here. It checks that the forced
// kind's kernels are the ones that ran.
func TestAttentionParityOfEachKind(t *testing.T) {
	var cases []backendtest.Case
	for _, c := range backendtest.NNCases() {
		if strings.HasPrefix(c.Name, "Attention/") {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		t.Fatal("nnCases has no attention cases")
	}
	d := device(t)
	for _, kind := range attnKinds {
		t.Run(kind, func(t *testing.T) {
			forceAttention(t, kind)
			runNNCases(t, cases)

			vb := NewBackendOn(d)
			defer vb.Close()
			const B, T, C, NH = 1, 5, 8, 2
			r := rand.New(rand.NewPCG(1, 2))
			qkv := backendtest.OnBackend(t, vb, randVec(r, B*T*3*C), 0)
			out := backendtest.OnBackend(t, vb, make([]float32, B*T*C), 0)
			att := backendtest.OnBackend(t, vb, make([]float32, B*NH*T), 0)
			scratch := backendtest.OnBackend(t, vb, make([]float32, B*NH*T), 0)
			dqkv := backendtest.OnBackend(t, vb, make([]float32, B*T*3*C), 0)
			calls := mmRunKernels(t, vb, func() {
				vb.AttentionForward(out, att, qkv, B, T, C, NH)
				vb.AttentionBackward(dqkv, scratch, out, qkv, out, att, B, T, C, NH)
			})
			for _, prefix := range attnPassKernels[kind] {
				ran := 0
				for name, n := range calls {
					if strings.HasPrefix(name, prefix) {
						ran += n
					}
				}
				if ran != 1 {
					t.Errorf("%s ran %d times, want once (kernels that ran: %v)", prefix, ran, calls)
				}
			}
		})
	}
}

// TestBroadcastAttentionNeedsShuffles: forced onto a device without subgroup shuffles, the
// broadcast kernels are refused with an error naming the missing feature and the override,
// not left to fail in the driver.
func TestBroadcastAttentionNeedsShuffles(t *testing.T) {
	d := device(t)
	had := d.Info.SubgroupShuffle
	d.Info.SubgroupShuffle = false
	t.Cleanup(func() { d.Info.SubgroupShuffle = had })
	forceAttention(t, "broadcast")
	err := attentionForwardError(t, d, 1, 3, 8, 2)
	if err == nil || !strings.Contains(err.Error(), "subgroup shuffles") || !strings.Contains(err.Error(), attnKernelEnv) {
		t.Fatalf("broadcast attention without shuffles: error %v, want one naming shuffles and %s", err, attnKernelEnv)
	}
}

// attentionForwardError runs AttentionForward over zeros on a new backend and returns the
// error it records.
func attentionForwardError(t *testing.T, d *Device, B, T, C, NH int) error {
	vb := NewBackendOn(d)
	defer vb.Close()
	qkv, _ := backendtest.PlaceGuarded(t, vb, make([]float32, B*T*3*C))
	out, _ := backendtest.PlaceGuarded(t, vb, make([]float32, B*T*C))
	att, _ := backendtest.PlaceGuarded(t, vb, make([]float32, B*NH*T))
	vb.AttentionForward(out, att, qkv, B, T, C, NH)
	return vb.Sync()
}
