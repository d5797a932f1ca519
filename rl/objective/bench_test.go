package objective

import "testing"

// Host cost of one loss evaluation at a typical RL batch: 64 rows (8 prompts x 8 completions)
// by 256 completion tokens.
func BenchmarkGRPOLoss64x256(b *testing.B) {
	in := randomGRPO(1, 64, 256)
	cfg := DefaultGRPOConfig()
	cfg.MaxCompletionLength = 256
	b.ReportAllocs()
	for b.Loop() {
		if _, err := GRPOLoss(cfg, in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPPOLoss64x256(b *testing.B) {
	in := randomPPO(1, 64, 256)
	cfg := DefaultPPOConfig()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PPOLoss(cfg, in); err != nil {
			b.Fatal(err)
		}
	}
}
