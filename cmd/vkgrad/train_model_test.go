package main

import (
	"testing"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
)

// Every --preset names one family, so which family presetModel looks a name up in first never
// changes the model.
func TestPresetNamesOneFamily(t *testing.T) {
	for _, name := range gpt2.PresetNames() {
		if _, err := llama.Preset(name); err == nil {
			t.Errorf("preset %q is both a GPT-2 and a Llama-family shape", name)
		}
	}
	if len(gpt2.PresetNames()) == 0 || len(llama.PresetNames()) == 0 {
		t.Fatal("a family has no presets")
	}
}
