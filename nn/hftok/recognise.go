package hftok

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// knownTemplates are the chat templates rendered here exactly, by the SHA-256 of their text.
// The text must match byte for byte: white space inside or between tags can be output (these
// templates rely on trim_blocks and on "-" only in places), so a reindented copy may render
// differently and is refused.
var knownTemplates = map[string]string{
	// Meta-Llama-3-8B-Instruct.
	"ba03a121d097859c7b5b9cd03af99aafe95275210d2876f642ad9929a150f122": "llama3",
	// Llama-3.1-8B-Instruct.
	"93c0e9aa3629bbd77e68dbc0f5621f6e6b23aa8d74b932595cdb8d64684526d7": "llama3.1",
	// Llama-3.2-3B-Instruct.
	"d82792f95932f1c9cef5c4bd992f171225e3bf8c7b609b4557c9e1ec96be819f": "llama3.2",
	// Qwen2-0.5B-Instruct.
	"793202280c0910ab26bc6eb57c8212c2417324c6d8c4efd0d10d59092ab3e3eb": "qwen2",
	// Qwen2.5-7B-Instruct, Qwen2.5-Coder-1.5B-Instruct.
	"55b2f4a26ac9ee719330a61a0c39d9e538b0e9322212f048326318cff4f8674a": "qwen2.5",
	// Qwen2.5-0.5B-Instruct as first released, its tool-call format in doubled braces.
	"4e9918361c284a93880606d182d64da6a9fe97cdc1f5c5a78c1c8840444246fc": "qwen2.5-early",
}

// templateFor recognises a template: one of the known texts, or Qwen3's by phrases only it
// holds. bos is the tokenizer's BOS token, which Llama's templates start with.
func templateFor(text, bos string) (Template, error) {
	name := knownTemplates[templateDigest(text)]
	if strings.HasPrefix(name, "llama") && bos == "" {
		return nil, fmt.Errorf("the %s chat template starts with bos_token, which tokenizer_config.json does not give", name)
	}
	switch name {
	case "llama3":
		return llama3{bos: bos}, nil
	case "llama3.1", "llama3.2":
		return llama31{bos: bos, name: name}, nil
	case "qwen2":
		return qwen2{}, nil
	case "qwen2.5":
		return qwen25{callFormat: qwenCallFormat}, nil
	case "qwen2.5-early":
		return qwen25{callFormat: qwenEarlyCallFormat}, nil
	}
	if strings.Contains(text, "<|im_start|>") && strings.Contains(text, "reasoning_content") && strings.Contains(text, "last_query_index") {
		return qwen3{}, nil
	}
	return nil, unknownTemplate(text)
}

// unknownTemplate says the template is there but is none vkgrad renders: its size and digest
// (to tell which it is), which family it looks like, if any, and what is rendered.
func unknownTemplate(text string) error {
	const known = "vkgrad renders Llama 3, 3.1 and 3.2's, Qwen2's, Qwen2.5's and Qwen3's templates exactly as published; give prompts as text"
	id := fmt.Sprintf("chat_template (%d bytes, sha256 %.12s)", len(text), templateDigest(text))
	switch {
	case strings.Contains(text, "<|start_header_id|>"):
		return errors.New(id + " has Llama 3's header tokens but is none of the Llama 3 texts it knows (a changed or newer template); " + known)
	case strings.Contains(text, "<|im_start|>"):
		return errors.New(id + " is ChatML but none of the Qwen texts it knows (a changed or other model's template); " + known)
	}
	return errors.New(id + " is not one it knows; " + known)
}

// templateDigest is the hex SHA-256 of text, less a newline after a closing block tag at its
// end, which trim_blocks drops: with or without it the template renders the same.
func templateDigest(text string) string {
	if strings.HasSuffix(text, "%}\n") {
		text = text[:len(text)-1]
	}
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// TemplateNamed returns a renderer by its name (a Template's Name: llama3, llama3.1, llama3.2,
// qwen2, qwen2.5, qwen3), for a model without a tokenizer_config.json of its own, such as a
// random model of a family's shape. bos is the text Llama's templates start with.
func TemplateNamed(name, bos string) (Template, error) {
	switch name {
	case "llama3":
		return llama3{bos: bos}, nil
	case "llama3.1", "llama3.2":
		return llama31{bos: bos, name: name}, nil
	case "qwen2":
		return qwen2{}, nil
	case "qwen2.5":
		return qwen25{callFormat: qwenCallFormat}, nil
	case "qwen3":
		return qwen3{}, nil
	}
	return nil, fmt.Errorf("hftok: no chat template named %q (have llama3, llama3.1, llama3.2, qwen2, qwen2.5, qwen3)", name)
}
