package vk

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// The tiled matmul kernel's tile sizes (shaders/matmul_tiled.glsl): the presets, the choice
// among them, the VKGRAD_MATMUL_TILE override and the split-K plan all live here.

// mmTile is a workgroup tile of out, BM x BN, walked BK deep per step, each invocation holding
// a TM x TN block in registers: a workgroup of (BN/TN) x (BM/TM) invocations.
type mmTile struct{ BM, BN, BK, TM, TN int }

func (t mmTile) String() string {
	return fmt.Sprintf("%dx%dx%d/%dx%d", t.BM, t.BN, t.BK, t.TM, t.TN)
}

// local is the workgroup shape (x along N, y along M).
func (t mmTile) local() [3]uint32 { return [3]uint32{uint32(t.BN / t.TN), uint32(t.BM / t.TM), 1} }

// sharedBytes is the shared memory the kernel declares: two k-major tiles padded by 4 words.
func (t mmTile) sharedBytes() int { return t.BK * (t.BM + 4 + t.BN + 4) * 4 }

// kernel is the tiled kernel specialised for t, with vec4 operand loads or scalar ones, rounding
// its operands where round is mmRoundBf16 or mmRoundF16 (in the variant compiled to round, so
// that the float32 kernel's code is not touched).
func (t mmTile) kernel(vec4 bool, round uint32) Kernel {
	name := "matmul_tiled"
	if vec4 {
		name = "matmul_tiled_vec4"
	}
	if round != 0 {
		name += "_round"
	}
	return Kernel{Shader: name, Bindings: 5, Push: 18, Local: t.local(), Spec: [maxSpec]uint32{uint32(t.TM), uint32(t.TN), uint32(t.BK), round}}
}

// The presets, largest first. large: 256 invocations of 4x8 outputs (32 accumulators) and
// 12.5 KiB of shared memory, for products with enough tiles to fill every compute unit; medium
// halves the tile's width for fewer, smaller products; small keeps a compute unit per 32x32
// tile for products of a few rows (sampling, tiny batches). Measured on an NVIDIA H200 with
// GPT-2 124M's training products at B=8 T=1024 (vkgrad bench matmul): 64x128x16/4x8 ran at
// 18-29 TFLOP/s (0.48-0.77 of the FMA peak), 128x128x16/4x8 at 18-30, 64x64x16/8x4 at 15-27,
// while 128x128x16/8x8 (64 accumulators, the earlier preset) and 128x128x8/8x8 ran at 2 (0.06)
// and 64x128x32/4x8 at 9-13: more accumulators per invocation, or a deeper step, spill.
var mmPresets = []struct {
	name string
	tile mmTile
}{
	{"large", mmTile{BM: 64, BN: 128, BK: 16, TM: 4, TN: 8}},
	{"medium", mmTile{BM: 64, BN: 64, BK: 16, TM: 8, TN: 4}},
	{"small", mmTile{BM: 32, BN: 32, BK: 8, TM: 4, TN: 4}},
}

// mmTileEnv names the override of the tile: BMxBNxBK/TMxTN, e.g. 128x128x16/8x8.
const mmTileEnv = "VKGRAD_MATMUL_TILE"

// mmForceTile, when set by tests, replaces the tile chosen for the product.
var mmForceTile mmTile

// mmForceSplits, when set by tests, replaces the planned split-K count (1 turns it off).
var mmForceSplits int

// parseMMTile reads BMxBNxBK/TMxTN.
func parseMMTile(s string) (mmTile, error) {
	var t mmTile
	dims, regs, ok := strings.Cut(s, "/")
	d, r := strings.Split(dims, "x"), strings.Split(regs, "x")
	if !ok || len(d) != 3 || len(r) != 2 {
		return t, fmt.Errorf("%s=%q: want BMxBNxBK/TMxTN, e.g. 128x128x16/8x8", mmTileEnv, s)
	}
	var v [5]int
	for i, f := range append(d, r...) {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return t, fmt.Errorf("%s=%q: %q is not a positive integer", mmTileEnv, s, f)
		}
		v[i] = n
	}
	return mmTile{BM: v[0], BN: v[1], BK: v[2], TM: v[3], TN: v[4]}, nil
}

// check says why the kernel cannot run t on a device with info's limits.
func (t mmTile) check(info *DeviceInfo) error {
	l := t.local()
	switch {
	case t.BM%t.TM != 0 || t.BN%t.TN != 0:
		return fmt.Errorf("BM must be a multiple of TM and BN of TN")
	case t.BM%4 != 0 || t.BN%4 != 0 || t.BK%4 != 0:
		return fmt.Errorf("BM, BN and BK must be multiples of 4 (the vec4 loads)")
	case t.TM*t.TN > 256:
		return fmt.Errorf("TMxTN = %d registers per invocation, at most 256", t.TM*t.TN)
	case l[0] > info.MaxComputeWorkGroupSize[0] || l[1] > info.MaxComputeWorkGroupSize[1] || l[0]*l[1] > info.MaxComputeWorkGroupInvocations:
		return fmt.Errorf("a workgroup of %dx%d invocations exceeds the device's %v, %d in all", l[0], l[1], info.MaxComputeWorkGroupSize, info.MaxComputeWorkGroupInvocations)
	case uint32(t.sharedBytes()) > info.MaxComputeSharedMemorySize:
		return fmt.Errorf("%d bytes of shared memory exceed the device's %d", t.sharedBytes(), info.MaxComputeSharedMemorySize)
	}
	return nil
}

// mmTileParsed keeps the last override parsed, so that a training step allocates nothing.
var mmTileParsed struct {
	sync.Mutex
	s    string
	info *DeviceInfo
	tile mmTile
	err  error
}

// mmTileOverride parses and checks the value s of VKGRAD_MATMUL_TILE for the device of info.
func mmTileOverride(s string, info *DeviceInfo) (mmTile, error) {
	c := &mmTileParsed
	c.Lock()
	defer c.Unlock()
	if c.s == s && c.info == info {
		return c.tile, c.err
	}
	t, err := parseMMTile(s)
	if err == nil {
		if err = t.check(info); err != nil {
			err = fmt.Errorf("%s=%q: %w", mmTileEnv, s, err)
		}
	}
	c.s, c.info, c.tile, c.err = s, info, t, err
	return t, err
}

// mmTileFor picks the tile of a batch of M x N products: the user's override, else the largest
// preset whose tiles still number at least one per compute unit, else the smallest that fits.
func (b *Backend) mmTileFor(M, N, batch int) (mmTile, error) {
	info := &b.dev.Info
	if mmForceTile != (mmTile{}) {
		return mmForceTile, mmForceTile.check(info)
	}
	if s := os.Getenv(mmTileEnv); s != "" {
		return mmTileOverride(s, info)
	}
	cus := b.computeUnits()
	var fit mmTile
	for _, p := range mmPresets {
		if p.tile.check(info) != nil {
			continue
		}
		fit = p.tile
		if mmTiles(fit, M, N)*batch >= cus {
			return fit, nil
		}
	}
	if fit == (mmTile{}) {
		return fit, fmt.Errorf("vk: MatMul: no matmul tile fits %s's limits", info.Name)
	}
	return fit, nil
}

func mmTiles(t mmTile, M, N int) int { return mmCeilDiv(M, t.BM) * mmCeilDiv(N, t.BN) }

// Split-K: a product with fewer than two workgroups per compute unit (one resident workgroup
// each leaves latency unhidden, and a second partial wave idles most of the device) and a long
// K (weight gradients, K = batch x sequence) sums K in up to mmMaxSplits parts of at least
// mmSplitMinK, each into its own slice of scratch, then adds the slices in order. The count
// follows from the shape and the device alone, so two runs give the same bits.
const (
	mmMaxSplits = 8
	mmSplitMinK = 512
)

// mmSplits plans the split count and the depth of each split (a multiple of BK) for a batch of
// M x N x K products with tile t.
func (b *Backend) mmSplits(t mmTile, M, N, K, batch int) (splits, ksplit int) {
	splits = 1
	if mmForceSplits > 0 {
		splits = mmForceSplits
	} else if groups, target := mmTiles(t, M, N)*batch, 2*b.computeUnits(); groups < target {
		splits = min(mmMaxSplits, mmCeilDiv(target, groups), K/mmSplitMinK)
	}
	if splits <= 1 || K < 2 {
		return 1, max(K, 1)
	}
	ksplit = mmCeilDiv(mmCeilDiv(K, splits), t.BK) * t.BK
	return mmCeilDiv(K, ksplit), ksplit
}

// computeUnits is the device's count of compute units (AMD CUs, NVIDIA SMs, Intel Xe cores),
// as the driver reports it where an extension says, else a typical count for the vendor.
func (b *Backend) computeUnits() int {
	info := &b.dev.Info
	if info.ComputeUnits > 0 {
		return int(info.ComputeUnits)
	}
	if info.Type == DeviceCPU {
		return runtime.NumCPU()
	}
	switch info.VendorID {
	case 0x1002: // AMD without VK_AMD_shader_core_properties: a mid-range RDNA part
		return 32
	case 0x10DE: // NVIDIA without VK_NV_shader_sm_builtins
		return 46
	case 0x8086: // Intel: integrated Xe (96 EUs = 12 Xe cores); Arc has 8..32
		return 12
	case 0x106B: // Apple through MoltenVK: M1..M3 base parts
		return 10
	case 0x13B5, 0x5143: // Arm Mali, Qualcomm Adreno
		return 8
	}
	return 16
}
