package hftok

import "testing"

// TemplateNamed gives the renderers LoadTemplate recognises, by name.
func TestTemplateNamed(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "hi"}}
	for name, want := range map[string]string{
		"qwen3":   "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
		"qwen2.5": "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
		"llama3":  "<s><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
	} {
		tmpl, err := TemplateNamed(name, "<s>")
		if err != nil {
			t.Fatal(err)
		}
		got, err := tmpl.Render(msgs, ChatOptions{AddGenerationPrompt: true})
		if err != nil || got != want || tmpl.Name() != name {
			t.Errorf("%s: %q, %v (name %s)", name, got, err, tmpl.Name())
		}
	}
	if _, err := TemplateNamed("mistral", ""); err == nil {
		t.Error("an unknown name was accepted")
	}
}
