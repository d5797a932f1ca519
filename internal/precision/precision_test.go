package precision

import "testing"

// fp16 alone scales the loss.
func TestLossScaler(t *testing.T) {
	for _, p := range []string{"fp32", "bf16", ""} {
		if LossScaler(p) != nil {
			t.Errorf("%s scales the loss", p)
		}
	}
	if LossScaler("fp16") == nil {
		t.Error("fp16 does not scale the loss")
	}
}
