package hftok_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vkgrad/vkgrad/nn/hftok"
)

// llama3Template is Meta-Llama-3-8B-Instruct's chat_template.
const llama3Template = `{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>

'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>

' }}{% endif %}`

// A model directory's tokenizer_config.json names its chat template; LoadTemplate recognises
// it and renders conversations as the model was trained to read them, ready for Encode.
func ExampleLoadTemplate() {
	dir, err := os.MkdirTemp("", "model")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	config, err := json.Marshal(map[string]string{"bos_token": "<|begin_of_text|>", "chat_template": llama3Template})
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), config, 0o644); err != nil {
		panic(err)
	}

	tmpl, err := hftok.LoadTemplate(dir)
	if err != nil {
		panic(err)
	}
	text, err := tmpl.Render([]hftok.Message{
		{Role: "system", Content: "Answer in one word."},
		{Role: "user", Content: "What colour is the sky?"},
	}, hftok.ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(tmpl.Name())
	fmt.Printf("%q\n", text)
	// Output:
	// llama3
	// "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nAnswer in one word.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat colour is the sky?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
}
