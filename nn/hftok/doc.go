// Package hftok is the tokenizer of a Hugging Face model directory (tokenizer.json): byte-level
// BPE with its pre-tokenizer's split regex (lookaheads included), NFC normalisation, and added
// and special tokens matched before BPE, as Hugging Face tokenizers encodes and decodes.
//
// LoadTemplate renders conversations in the directory's chat template (tokenizer_config.json)
// for the templates it knows, Llama 3, 3.1 and 3.2, Qwen2, Qwen2.5 and Qwen3, exactly as
// transformers' apply_chat_template does; it refuses any other rather than guess.
package hftok
