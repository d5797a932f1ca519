package vk

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/shaders"
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

			checkAttentionKernels(t, d, 8, 2, attnPassKernels[kind])
		})
	}
}

// checkAttentionKernels runs a forward and a backward pass of attention over 5 positions with
// NH heads of C/NH on a new backend and checks that each kernel of want (by the prefix of its
// shader's name) ran once.
func checkAttentionKernels(t *testing.T, d *Device, C, NH int, want [3]string) {
	t.Helper()
	vb := NewBackendOn(d)
	defer vb.Close()
	const B, T = 1, 5
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
	for _, prefix := range want {
		ran := 0
		for name, n := range calls {
			if strings.HasPrefix(name, prefix) {
				ran += n
			}
		}
		if ran != 1 {
			t.Errorf("heads of %d: %s ran %d times, want once (kernels that ran: %v)", C/NH, prefix, ran, calls)
		}
	}
}

// TestFlashRBFallsBack: where the device cannot run a register-blocked kernel (no subgroup
// shuffles, subgroups narrower than a row's invocations, too little shared memory), flash_rb
// runs that pass's flash kernel instead, with results that match the CPU backend's, and the
// device's description says which and why.
func TestFlashRBFallsBack(t *testing.T) {
	d := device(t)
	saved := d.Info
	t.Cleanup(func() { d.Info = saved })
	forceAttention(t, attnFlashRB)
	flash, rb := attnPassKernels["flash"], attnPassKernels[attnFlashRB]
	for _, s := range []struct {
		name     string
		edit     func(*DeviceInfo)
		C, NH    int
		want     [3]string
		describe string
	}{
		{"no shuffles", func(i *DeviceInfo) { i.SubgroupShuffle = false }, 8, 2, [3]string{flash[0], rb[1], rb[2]},
			"flash_rb partly: flash runs where attention_flash_rb_forward_h64 needs subgroup shuffles in compute shaders; attention_flash_rb_forward_h128 needs subgroup shuffles in compute shaders"},
		{"subgroups of 4, heads of 64", func(i *DeviceInfo) { i.MinSubgroupSize = 4 }, 128, 2, rb, ""},
		{"subgroups of 4, heads of 96", func(i *DeviceInfo) { i.MinSubgroupSize = 4 }, 96, 1, [3]string{flash[0], rb[1], rb[2]},
			"flash_rb partly: flash runs where attention_flash_rb_forward_h128 needs subgroups of at least 8 invocations; the device's may have 4"},
		{"16 KiB of shared memory", func(i *DeviceInfo) { i.MaxComputeSharedMemorySize = 16 << 10 }, 8, 2, flash, ""},
	} {
		t.Run(s.name, func(t *testing.T) {
			d.Info = saved
			s.edit(&d.Info)
			checkAttentionKernels(t, d, s.C, s.NH, s.want)
			if s.describe != "" {
				if got := describeFlashRB(d.Info); got != s.describe {
					t.Errorf("describeFlashRB = %q, want %q", got, s.describe)
				}
			}
			var cases []backendtest.Case
			for _, c := range backendtest.NNCases() {
				if c.Name == "Attention/B=2,T=33,C=128,NH=2,qk*1" || (s.C/s.NH > 64 && strings.HasPrefix(c.Name, "Attention/B=1,T=40,C=96,")) {
					cases = append(cases, c)
				}
			}
			if len(cases) == 0 {
				t.Fatal("no attention case of heads of 64 or 96")
			}
			runNNCases(t, cases)
		})
	}
	d.Info = saved
	if got, want := describeFlashRB(d.Info), "flash_rb available (VKGRAD_ATTENTION_KERNEL=flash_rb)"; d.Info.SubgroupShuffle && d.Info.MaxComputeSharedMemorySize >= 32<<10 && got != want {
		t.Errorf("describeFlashRB of %s = %q, want %q", d.Info.Name, got, want)
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

// TestFlashRBSharedMatchesShaders: the shared memory the host reckons for each
// register-blocked variant, which decides where it runs, is what its SPIR-V declares.
func TestFlashRBSharedMatchesShaders(t *testing.T) {
	for _, vs := range [][2]flashRBVariant{kFlashRB.forward, kFlashRB.query, kFlashRB.key} {
		for _, v := range vs {
			spv, err := shaders.Lookup(v.kernel.Shader)
			if err != nil {
				t.Fatal(err)
			}
			got, err := spirvWorkgroupBytes(spv)
			if err != nil {
				t.Fatalf("%s: %v", v.kernel.Shader, err)
			}
			if got != int(v.shared) {
				t.Errorf("%s declares %d bytes of shared memory; the host reckons %d", v.kernel.Shader, got, v.shared)
			}
		}
	}
}

// spirvWorkgroupBytes adds up the sizes of a module's Workgroup (shared) variables, each an
// array of 32-bit scalars or vectors of them.
func spirvWorkgroupBytes(spv []byte) (int, error) {
	const (
		opTypeInt, opTypeFloat, opTypeVector, opTypeArray = 21, 22, 23, 28
		opConstant, opTypePointer, opVariable             = 43, 32, 59
		storageWorkgroup                                  = 4
	)
	size, consts, pointers := map[uint32]int{}, map[uint32]int{}, map[uint32]uint32{}
	var vars []uint32
	err := spirvInstructions(spv, func(op uint32, a []uint32) {
		switch op {
		case opTypeInt, opTypeFloat:
			size[a[0]] = int(a[1]) / 8
		case opTypeVector:
			size[a[0]] = size[a[1]] * int(a[2])
		case opConstant:
			consts[a[1]] = int(a[2])
		case opTypeArray:
			size[a[0]] = size[a[1]] * consts[a[2]]
		case opTypePointer:
			pointers[a[0]] = a[2]
		case opVariable:
			if a[2] == storageWorkgroup {
				vars = append(vars, a[0])
			}
		}
	})
	total := 0
	for _, ptr := range vars {
		n := size[pointers[ptr]]
		if n == 0 {
			return 0, fmt.Errorf("a shared variable of a type this reckoning does not size")
		}
		total += n
	}
	return total, err
}

// TestFlashRBKernelsHaveNoPrivateArrays: the register-blocked kernels' blocks are unrolled
// into registers in the SPIR-V itself (no Function-storage variables left), rather than left
// as private arrays that a driver might place in memory.
func TestFlashRBKernelsHaveNoPrivateArrays(t *testing.T) {
	const opVariable, storageFunction = 59, 7
	for _, vs := range [][2]flashRBVariant{kFlashRB.forward, kFlashRB.query, kFlashRB.key} {
		for _, v := range vs {
			spv, err := shaders.Lookup(v.kernel.Shader)
			if err != nil {
				t.Fatal(err)
			}
			private := 0
			if err := spirvInstructions(spv, func(op uint32, a []uint32) {
				if op == opVariable && a[2] == storageFunction {
					private++
				}
			}); err != nil {
				t.Fatalf("%s: %v", v.kernel.Shader, err)
			}
			if private != 0 {
				t.Errorf("%s keeps %d private variables", v.kernel.Shader, private)
			}
		}
	}
}
