package llama

import (
	"math"
	"reflect"
	"testing"

	"github.com/vkgrad/vkgrad/nn/safetensors"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

func TestExportRoundTrip(t *testing.T) {
	for _, dir := range fixtureDirs(t) {
		m, err := Load(cpu.New(), dir)
		if err != nil {
			t.Fatal(err)
		}
		orig, _ := m.Params.ToHost()
		for _, dtype := range []string{"float32", "bfloat16"} {
			out := t.TempDir()
			if err := m.Export(out, dtype); err != nil {
				t.Fatal(err)
			}
			back, err := Load(cpu.New(), out)
			if err != nil {
				t.Fatalf("%s exported as %s does not load: %v", dir, dtype, err)
			}
			want := m.Config
			want.TorchDType = dtype
			if !reflect.DeepEqual(back.Config, want) {
				t.Errorf("%s: config after export\n%+v\nwant\n%+v", dir, back.Config, want)
			}
			got, _ := back.Params.ToHost()
			for i := range orig {
				w := orig[i]
				if dtype == "bfloat16" {
					w = safetensors.BF16ToFloat32(safetensors.Float32ToBF16(w))
				}
				if math.Float32bits(got[i]) != math.Float32bits(w) {
					t.Fatalf("%s as %s: parameter %d is %v, want %v", dir, dtype, i, got[i], w)
				}
			}
		}
	}
}
