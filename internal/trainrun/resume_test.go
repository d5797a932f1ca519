package trainrun

import (
	"reflect"
	"testing"

	"github.com/vkgrad/vkgrad/nn/train"
)

// givenFlags is a Config.Given of the flags named.
func givenFlags(names ...string) func(string) bool {
	return func(flag string) bool {
		for _, n := range names {
			if n == flag {
				return true
			}
		}
		return false
	}
}

// savedRun is a run's saved settings: a training configuration and its config.json.
func savedRun() (train.Config, Meta) {
	saved := DefaultConfig().Train
	saved.Batch, saved.Steps, saved.LR, saved.Recompute = 4, 50, 0.001, true
	return saved, Meta{Data: Data{Path: "/corpus", Ext: []string{".txt", ".md"}, Fingerprint: "f1"}, Init: "/init.bin",
		Run: &LoopSettings{ValEvery: 5, SaveEvery: 10, SampleTokens: 32, SamplePrompt: "Once"}}
}

// A resumed run takes its saved settings, keeping a given --steps, --recompute and run-loop
// flag, and a fixed flag given again with the saved value.
func TestAdopt(t *testing.T) {
	saved, meta := savedRun()
	c := DefaultConfig()
	c.Train.Steps, c.Train.Recompute, c.Train.Batch, c.Loop.SaveEvery, c.Loop.SamplePrompt = 80, false, 4, 7, "Hi"
	c.Preset = "gpt2-small" // free: the checkpoint says the shape
	c.Given = givenFlags("steps", "recompute", "batch", "save-every", "sample-prompt", "preset")
	if err := c.Adopt(saved, meta, 30); err != nil {
		t.Fatal(err)
	}
	want := saved
	want.Steps, want.Recompute = 80, false
	if !reflect.DeepEqual(c.Train, want) {
		t.Errorf("train settings %+v, want %+v", c.Train, want)
	}
	if wantLoop := (LoopSettings{ValEvery: 5, SaveEvery: 7, SampleTokens: 32, SamplePrompt: "Hi"}); c.Loop != wantLoop {
		t.Errorf("loop settings %+v, want %+v", c.Loop, wantLoop)
	}
	if !reflect.DeepEqual(c.Data, meta.Data) || c.Init != "" || c.Preset != "gpt2-small" {
		t.Errorf("data %+v, init %q, preset %q; want the saved data, the given init and preset", c.Data, c.Init, c.Preset)
	}
}

// A run saved before config.json had its run-loop settings, or the products a precision, takes
// the defaults: 100, 100, 96 and fp32.
func TestAdoptOlderRun(t *testing.T) {
	saved, meta := savedRun()
	saved.Precision, meta.Run = "", nil
	c := DefaultConfig()
	c.Loop = LoopSettings{ValEvery: 1, SaveEvery: 2, SampleTokens: 3, SamplePrompt: "x"}
	if err := c.Adopt(saved, meta, 0); err != nil {
		t.Fatal(err)
	}
	if want := (LoopSettings{ValEvery: 100, SaveEvery: 100, SampleTokens: 96}); c.Loop != want || c.Train.Precision != "fp32" {
		t.Errorf("loop settings %+v, precision %q; want %+v, fp32", c.Loop, c.Train.Precision, want)
	}
}

// A fixed flag given with another value than the saved one is refused, both written as on the
// command line; so is a --steps the run has passed.
func TestAdoptRefuses(t *testing.T) {
	for _, tc := range []struct {
		flag string
		set  func(c *Config)
		want string
	}{
		{"lr", func(c *Config) { c.Train.LR = 3e-3 }, "--lr 0.003: this run was saved with --lr 0.001, which a resumed run keeps"},
		{"ext", func(c *Config) { c.Data.Ext = []string{".go"} }, "--ext [.go]: this run was saved with --ext [.txt,.md], which a resumed run keeps"},
		{"init", func(c *Config) { c.Init = "/other.bin" }, "--init /other.bin: this run was saved with --init /init.bin, which a resumed run keeps"},
		{"seed", func(c *Config) { c.Train.Seed = 7 }, "--seed 7: this run was saved with --seed 1, which a resumed run keeps"},
		{"no-shuffle", func(c *Config) { c.Train.NoShuffle = true }, "--no-shuffle true: this run was saved with --no-shuffle false, which a resumed run keeps"},
		{"precision", func(c *Config) { c.Train.Precision = "bf16" }, "--precision bf16: this run was saved with --precision fp32, which a resumed run keeps"},
		{"steps", func(c *Config) { c.Train.Steps = 20 }, "--steps 20: the run has already taken 30 steps"},
	} {
		saved, meta := savedRun()
		c := DefaultConfig()
		tc.set(&c)
		c.Given = givenFlags(tc.flag)
		if err := c.Adopt(saved, meta, 30); err == nil || err.Error() != tc.want {
			t.Errorf("--%s: %v, want %q", tc.flag, err, tc.want)
		}
	}
}

// Flag values are written as the command line writes them: the shortest float that reads
// back, a list as its CSV line in brackets.
func TestFlagValues(t *testing.T) {
	if got := floatFlag(3e-4); got != "0.0003" {
		t.Errorf("3e-4: %q", got)
	}
	if got := floatFlag(1e-21); got != "1e-21" {
		t.Errorf("1e-21: %q", got)
	}
	for _, tc := range []struct {
		in   []string
		want string
	}{{nil, "[]"}, {[]string{".txt"}, "[.txt]"}, {[]string{"a,b", "c"}, `["a,b",c]`}} {
		if got := sliceFlag(tc.in); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}
