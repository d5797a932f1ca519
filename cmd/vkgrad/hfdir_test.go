package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// short keeps a grpo run that should have been refused to one small step.
const short = "--steps=1"

// TestFaultBrokenConfigIsNotCalledAGPT2: a Hugging Face directory whose config.json has no
// model_type, is not JSON, links to itself or to /dev/zero is refused by sample, grpo and
// export with what is wrong with config.json, never as "a GPT-2 model".
func TestFaultBrokenConfigIsNotCalledAGPT2(t *testing.T) {
	model := chatModel(t)
	cpath := filepath.Join(model, "config.json")
	good, err := os.ReadFile(cpath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(good, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "model_type")
	noType, _ := json.Marshal(doc)
	for _, c := range []struct {
		name, want string
		write      func() error
	}{
		{"no model_type", "config.json has no model_type", func() error { return os.WriteFile(cpath, noType, 0o644) }},
		{"invalid JSON", "config.json is not valid JSON", func() error { return os.WriteFile(cpath, good[:len(good)/2], 0o644) }},
		{"link loop", "too many levels of symbolic links", func() error { return os.Symlink(cpath, cpath) }},
		{"link to /dev/zero", "config.json is a character device", func() error { return os.Symlink("/dev/zero", cpath) }},
	} {
		os.Remove(cpath)
		if err := c.write(); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		for _, args := range [][]string{
			{"sample", "--model", model, "--chat", "hi", "--device", "cpu", "-q", "-n", "1"},
			{"grpo", "--init", model, "--dataset", writeChatDataset(t, dir), "--run-dir", filepath.Join(dir, "run"), "--device", "cpu", "-q", short},
			{"export", "--model", model, "--out", filepath.Join(dir, "out")},
		} {
			out, err := runCLI(args...)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), cpath) || strings.Contains(err.Error(), "GPT-2") {
				t.Errorf("%s: %s: %v, want an error naming %s with %q\n%s", c.name, args[0], err, cpath, c.want, out)
			}
		}
	}
}

// TestFaultUnknownChatTemplateSaysWhy: a dataset of messages over a model whose chat template
// is there but not one vkgrad renders is refused saying so, not as a model without one.
func TestFaultUnknownChatTemplateSaysWhy(t *testing.T) {
	model := chatModel(t)
	tpath := filepath.Join(model, "tokenizer_config.json")
	b, err := os.ReadFile(tpath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["chat_template"] = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
	b, _ = json.Marshal(doc)
	if err := os.WriteFile(tpath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, err = runCLI("grpo", "--init", model, "--dataset", writeChatDataset(t, dir), "--run-dir", filepath.Join(dir, "run"), "--device", "cpu", "-q", short)
	if err == nil || strings.Contains(err.Error(), "no chat template") || !strings.Contains(err.Error(), "is ChatML but none of the Qwen texts") || !strings.Contains(err.Error(), tpath) {
		t.Errorf("grpo over an unknown chat template: %v", err)
	}
}
