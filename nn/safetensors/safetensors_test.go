package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rawFile assembles a safetensors file from a literal header and data bytes.
func rawFile(t *testing.T, header string, data []byte) string {
	t.Helper()
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	b.Write(data)
	p := filepath.Join(t.TempDir(), "x.safetensors")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]float32, 300_001) // spans several read chunks
	for i := range big {
		big[i] = rng.Float32()*2 - 1
	}
	half := make([]float32, 700_003)
	for i := range half {
		half[i] = float32(rng.NormFloat64())
	}
	ints := []int32{-7, 0, 1 << 30, math.MinInt32}
	longs := []int64{math.MaxInt64, -1, 3}
	meta := map[string]string{"format": "pt", "note": "héllo"}
	tensors := []Tensor{
		NewF32("big", []int{1, 300_001}, big),
		{Name: "half", DType: BF16, Shape: []int{700_003}, F32Data: half},
		{Name: "ints", DType: I32, Shape: []int{2, 2}, I32Data: ints},
		{Name: "longs", DType: I64, Shape: []int{3}, I64Data: longs},
		NewF32("scalar", []int{}, []float32{42}),
		NewF32("empty", []int{0, 5}, nil),
	}
	p := filepath.Join(t.TempDir(), "rt.safetensors")
	if err := WriteFile(p, tensors, meta); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	if got, want := strings.Join(f.Names(), ","), "big,empty,half,ints,longs,scalar"; got != want {
		t.Errorf("Names = %s, want %s", got, want)
	}
	if f.Metadata()["format"] != "pt" || f.Metadata()["note"] != "héllo" || len(f.Metadata()) != 2 {
		t.Errorf("metadata = %v, want %v", f.Metadata(), meta)
	}
	if f.dataStart%8 != 0 {
		t.Errorf("data section starts at %d, not 8-byte aligned", f.dataStart)
	}
	info, _ := f.Info("big")
	if info.DType != F32 || len(info.Shape) != 2 || info.Shape[0] != 1 || info.Shape[1] != 300_001 {
		t.Errorf("big info = %+v", info)
	}
	gotBig, err := f.Float32("big")
	if err != nil {
		t.Fatal(err)
	}
	for i := range big {
		if math.Float32bits(gotBig[i]) != math.Float32bits(big[i]) {
			t.Fatalf("big[%d] = %v, want %v", i, gotBig[i], big[i])
		}
	}
	// The portable decoding path, which big-endian machines take, gives the same bits.
	littleEndian = false
	gotBig2, err := f.Float32("big")
	littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1
	if err != nil {
		t.Fatal(err)
	}
	for i := range big {
		if math.Float32bits(gotBig2[i]) != math.Float32bits(big[i]) {
			t.Fatalf("portable path: big[%d] = %v, want %v", i, gotBig2[i], big[i])
		}
	}
	gotHalf, err := f.Float32("half")
	if err != nil {
		t.Fatal(err)
	}
	for i := range half {
		want := BF16ToFloat32(Float32ToBF16(half[i]))
		if gotHalf[i] != want {
			t.Fatalf("half[%d] = %v, want %v", i, gotHalf[i], want)
		}
		// bf16 keeps 8 significant bits: round-to-nearest error at most 2^-8 relative.
		if d := math.Abs(float64(gotHalf[i] - half[i])); d > math.Abs(float64(half[i]))/256 {
			t.Fatalf("half[%d] = %v, too far from %v", i, gotHalf[i], half[i])
		}
	}
	gotInts, err := f.Int32("ints")
	if err != nil {
		t.Fatal(err)
	}
	for i := range ints {
		if gotInts[i] != ints[i] {
			t.Errorf("ints[%d] = %d, want %d", i, gotInts[i], ints[i])
		}
	}
	gotLongs, err := f.Int64("longs")
	if err != nil {
		t.Fatal(err)
	}
	for i := range longs {
		if gotLongs[i] != longs[i] {
			t.Errorf("longs[%d] = %d, want %d", i, gotLongs[i], longs[i])
		}
	}
	if s, err := f.Float32("scalar"); err != nil || len(s) != 1 || s[0] != 42 {
		t.Errorf("scalar = %v, %v", s, err)
	}
	if e, err := f.Float32("empty"); err != nil || len(e) != 0 {
		t.Errorf("empty = %v, %v", e, err)
	}
	raw, err := f.Raw("ints")
	if err != nil || len(raw) != 16 || int32(binary.LittleEndian.Uint32(raw[8:])) != 1<<30 {
		t.Errorf("Raw(ints) = %v, %v", raw, err)
	}
}

// A hand-built file (not made by our writer) with F16 and BF16 data.
func TestReadHalfHandBuilt(t *testing.T) {
	f16 := []uint16{0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x7c00, 0x3555}
	f16want := []float32{1, -2, 65504, 1.0 / (1 << 24), float32(math.Copysign(0, -1)), float32(math.Inf(1)), 0.333251953125}
	bf := []uint16{0x3f80, 0xc0a0, 0x0001}
	bfwant := []float32{1, -5, math.Float32frombits(0x00010000)}
	var data []byte
	for _, h := range f16 {
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	for _, h := range bf {
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	hdr := `{"a":{"dtype":"F16","shape":[7],"data_offsets":[0,14]},"b":{"dtype":"BF16","shape":[3,1],"data_offsets":[14,20]}}`
	f, err := Open(rawFile(t, hdr, data))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := f.Float32("a")
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(f16want[i]) {
			t.Errorf("F16 %#04x = %v, want %v", f16[i], a[i], f16want[i])
		}
	}
	b, err := f.Float32("b")
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		if b[i] != bfwant[i] {
			t.Errorf("BF16 %#04x = %v, want %v", bf[i], b[i], bfwant[i])
		}
	}
	if f.Metadata() != nil {
		t.Errorf("metadata = %v, want nil", f.Metadata())
	}
}

// Every half-precision value against the IEEE 754 formula evaluated in float64.
func TestF16AllValues(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		s, e, m := h>>15, (h>>10)&0x1f, h&0x3ff
		var want float64
		switch {
		case e == 0x1f && m == 0:
			want = math.Inf(1)
		case e == 0x1f:
			want = math.NaN()
		case e == 0:
			want = math.Ldexp(float64(m)/1024, -14)
		default:
			want = math.Ldexp(1+float64(m)/1024, e-15)
		}
		if s == 1 {
			want = -want
		}
		got := float64(F16ToFloat32(uint16(h)))
		if math.IsNaN(want) {
			if !math.IsNaN(got) {
				t.Fatalf("F16 %#04x = %v, want NaN", h, got)
			}
			continue
		}
		if got != want || math.Signbit(got) != math.Signbit(want) {
			t.Fatalf("F16 %#04x = %v, want %v", h, got, want)
		}
	}
}

func TestFloat32ToBF16(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1.0
		{0x3f808000, 0x3f80}, // tie, even below
		{0x3f818000, 0x3f82}, // tie, odd below: up
		{0x3f808001, 0x3f81}, // above the tie
		{0x3f807fff, 0x3f80}, // below the tie
		{0x7f7fffff, 0x7f80}, // max float rounds to +Inf
		{0xff800000, 0xff80}, // -Inf
		{0x80000000, 0x8000}, // -0
	}
	for _, c := range cases {
		if got := Float32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("Float32ToBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	for _, nan := range []uint32{0x7f800001, 0x7fc00000, 0xffffffff} {
		if got := BF16ToFloat32(Float32ToBF16(math.Float32frombits(nan))); !math.IsNaN(float64(got)) {
			t.Errorf("NaN %#08x became %v", nan, got)
		}
	}
	// Random values: the result is the nearer of the two neighbouring bf16 values, ties to even.
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100_000; i++ {
		x := math.Float32frombits(rng.Uint32() &^ 0x40000000) // keep exponents finite
		lo := uint16(math.Float32bits(x) >> 16)
		dlo := math.Abs(float64(x) - float64(BF16ToFloat32(lo)))
		dhi := math.Abs(float64(x) - float64(BF16ToFloat32(lo+1)))
		want := lo
		if dhi < dlo || (dhi == dlo && lo&1 == 1) {
			want = lo + 1
		}
		if got := Float32ToBF16(x); got != want {
			t.Fatalf("Float32ToBF16(%#08x) = %#04x, want %#04x", math.Float32bits(x), got, want)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	f32 := make([]byte, 16)
	cases := []struct {
		name, header string
		data         []byte
		want         string
	}{
		{"not json", `{"a":`, nil, "header JSON"},
		{"not an object", `[1,2]   `, nil, "does not start with '{'"},
		{"unknown dtype", `{"a":{"dtype":"F12","shape":[4],"data_offsets":[0,16]}}`, f32, `tensor "a": unknown dtype "F12"`},
		{"one offset", `{"a":{"dtype":"F32","shape":[4],"data_offsets":[16]}}`, f32, `tensor "a": data_offsets has 1 values`},
		{"decreasing offsets", `{"a":{"dtype":"F32","shape":[0],"data_offsets":[16,0]}}`, f32, `tensor "a": data_offsets [16, 0]`},
		{"size mismatch", `{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}}`, f32, `tensor "a": dtype F32 shape [3] needs 12 bytes`},
		{"negative dim", `{"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}}`, f32, `tensor "a": shape [-4] has a negative dimension`},
		{"huge shape", `{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]}}`, f32, `tensor "a": shape [4294967296 4294967296] is too large`},
		{"past the end", `{"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}}`, f32, `truncated: tensor "a" ends at data byte 32 but the data section has 16`},
		{"overlap", `{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}`, f32, `tensor "b" (bytes 8-16) overlaps tensor "a"`},
		{"gap", `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}}`, f32, `bytes 8-12 before tensor "b" belong to no tensor`},
		{"trailing", `{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}}`, f32, "4 trailing bytes"},
		{"metadata not strings", `{"__metadata__":{"k":1},"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, f32, "__metadata__ must map strings to strings"},
		{"unknown field", `{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16],"x":1}}`, f32, `tensor "a": header entry`},
		{"fractional offset", `{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16.5]}}`, f32, `tensor "a": header entry`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := rawFile(t, c.header, c.data)
			f, err := Open(p)
			if err == nil {
				f.Close()
				t.Fatal("Open succeeded on a bad file")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not contain %q and the path", err, c.want)
			}
		})
	}
}

func TestOpenBadLength(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lenBytes := func(n uint64, rest string) []byte {
		return append(binary.LittleEndian.AppendUint64(nil, n), rest...)
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"short", []byte{1, 2, 3}, "truncated: 3 bytes, need at least 8"},
		{"zero", lenBytes(0, ""), "header length is 0"},
		{"huge", lenBytes(1<<40, "{}"), "exceeds the"},
		{"header cut", lenBytes(100, `{"a":`), "truncated: header length 100 needs 108 bytes, file has 13"},
	}
	for _, c := range cases {
		p := write(c.name, c.data)
		_, err := Open(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want it to contain %q and the path", c.name, err, c.want)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: error %v, want ErrNotExist", err)
	}
}

func TestReadErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.safetensors")
	if err := WriteFile(p, []Tensor{NewF32("w", []int{2}, []float32{1, 2}), {Name: "i", DType: I32, Shape: []int{1}, I32Data: []int32{1}}}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	checks := []struct {
		err  error
		want string
	}{
		{func() error { _, err := f.Float32("nope"); return err }(), `no tensor "nope"`},
		{f.ReadFloat32("w", make([]float32, 3)), `tensor "w" has 2 elements (shape [2]), destination has 3`},
		{func() error { _, err := f.Float32("i"); return err }(), `tensor "i" has dtype I32, want F32, F16 or BF16`},
		{func() error { _, err := f.Int32("w"); return err }(), `tensor "w" has dtype F32, want I32`},
		{func() error { _, err := f.Int64("w"); return err }(), `tensor "w" has dtype F32, want I64`},
	}
	for _, c := range checks {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) || !strings.Contains(c.err.Error(), p) {
			t.Errorf("error %v, want it to contain %q and the path", c.err, c.want)
		}
	}
}

type failWriter struct{ left int }

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		n := w.left
		w.left = 0
		return n, errors.New("disk full")
	}
	w.left -= len(p)
	return len(p), nil
}

func TestWriteErrors(t *testing.T) {
	cases := []struct {
		tensors []Tensor
		want    string
	}{
		{[]Tensor{NewF32("a", []int{1}, []float32{1}), NewF32("a", []int{1}, []float32{1})}, `tensor "a" given twice`},
		{[]Tensor{NewF32("a", []int{2, 2}, []float32{1})}, `tensor "a": shape [2 2] has 4 elements but 1 values were given`},
		{[]Tensor{NewF32("a", []int{-1}, nil)}, `tensor "a": shape [-1] has a negative dimension`},
		{[]Tensor{{Name: "a", DType: F16, Shape: []int{1}, F32Data: []float32{1}}}, `tensor "a": cannot write dtype "F16"`},
		{[]Tensor{NewF32("", []int{1}, []float32{1})}, `invalid tensor name ""`},
		{[]Tensor{NewF32("__metadata__", []int{1}, []float32{1})}, `invalid tensor name "__metadata__"`},
	}
	for _, c := range cases {
		var b bytes.Buffer
		err := Write(&b, c.tensors, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
		if b.Len() != 0 {
			t.Errorf("%q: %d bytes written before the error", c.want, b.Len())
		}
	}
	err := Write(&failWriter{left: 100}, []Tensor{NewF32("a", []int{1000}, make([]float32, 1000))}, nil)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("failing writer: error %v, want disk full", err)
	}
}

func TestWriteFill(t *testing.T) {
	const n = 40_001 // several fill chunks
	calls := 0
	fill := func(start int, dst []float32) {
		calls++
		for i := range dst {
			dst[i] = float32(start+i) * 0.5
		}
	}
	p := filepath.Join(t.TempDir(), "fill.safetensors")
	tensors := []Tensor{
		{Name: "f", DType: F32, Shape: []int{n}, F32Fill: fill},
		{Name: "b", DType: BF16, Shape: []int{7, 3}, F32Fill: fill},
	}
	if err := WriteFile(p, tensors, nil); err != nil {
		t.Fatal(err)
	}
	if calls < 4 {
		t.Errorf("fill called %d times, want one call per chunk", calls)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := f.Float32("f")
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != float32(i)*0.5 {
			t.Fatalf("f[%d] = %v, want %v", i, v, float32(i)*0.5)
		}
	}
	b, err := f.Float32("b")
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range b {
		if v != float32(i)*0.5 { // small halves are exact in bf16
			t.Fatalf("b[%d] = %v, want %v", i, v, float32(i)*0.5)
		}
	}
	both := Tensor{Name: "x", DType: F32, Shape: []int{1}, F32Data: []float32{1}, F32Fill: fill}
	if err := Write(&bytes.Buffer{}, []Tensor{both}, nil); err == nil || !strings.Contains(err.Error(), `tensor "x": both F32Data and F32Fill given`) {
		t.Errorf("both data and fill: %v", err)
	}
}

func BenchmarkWriteF32(b *testing.B) {
	data := make([]float32, 1<<22)
	b.SetBytes(4 << 22)
	for b.Loop() {
		if err := Write(io.Discard, []Tensor{NewF32("x", []int{len(data)}, data)}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadF32(b *testing.B) {
	data := make([]float32, 1<<22)
	p := filepath.Join(b.TempDir(), "r.safetensors")
	if err := WriteFile(p, []Tensor{NewF32("x", []int{len(data)}, data)}, nil); err != nil {
		b.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(4 << 22)
	for b.Loop() {
		if err := f.ReadFloat32("x", data); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzOpen: any bytes either fail to open with an error or open and read without panicking.
func FuzzOpen(f *testing.F) {
	var b bytes.Buffer
	Write(&b, []Tensor{NewF32("a", []int{2, 2}, []float32{1, 2, 3, 4}), {Name: "h", DType: BF16, Shape: []int{3}, F32Data: []float32{1, 2, 3}}, {Name: "i", DType: I64, Shape: []int{1}, I64Data: []int64{9}}}, map[string]string{"k": "v"})
	f.Add(b.Bytes())
	f.Add([]byte{})
	f.Add(append(binary.LittleEndian.AppendUint64(nil, 2), "{}"...))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "fuzz.safetensors")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		sf, err := Open(p)
		if err != nil {
			return
		}
		defer sf.Close()
		for _, n := range sf.Names() {
			info, _ := sf.Info(n)
			sf.Raw(n)
			switch info.DType {
			case F32, F16, BF16:
				if _, err := sf.Float32(n); err != nil {
					t.Fatalf("tensor %q listed but unreadable: %v", n, err)
				}
			case I32:
				sf.Int32(n)
			case I64:
				sf.Int64(n)
			}
		}
	})
}

func TestDuplicateHeaderKeyRefused(t *testing.T) {
	hdr := `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, uint64(len(hdr)))
	buf.WriteString(hdr)
	buf.Write(make([]byte, 4))
	path := filepath.Join(t.TempDir(), "dup.safetensors")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), `"a" twice`) {
		t.Fatalf("a header with a duplicate key: %v", err)
	}
}
