// Package hftok is a Hugging Face model's tokenizer (tokenizer.json) and chat template.
//
// # Tokenizer
//
// [Load] reads a directory's tokenizer.json into a [Tokenizer] that encodes and decodes as
// Hugging Face tokenizers does: byte-level BPE with its pre-tokenizer's split regex
// (lookaheads included), NFC normalisation where the file asks for it, and added and special
// tokens matched before BPE. Tokenizers it does not implement exactly are refused. [FromRanks]
// writes a tokenizer.json for a byte-level BPE vocabulary given as tiktoken gives one.
//
// # Chat templates
//
// [LoadTemplate] reads the chat template of a directory's tokenizer_config.json and returns a
// [Template] that renders [Message] lists exactly as transformers' apply_chat_template does, for
// the templates it recognises: Llama 3, 3.1 and 3.2, Qwen2, Qwen2.5 and Qwen3. It refuses any
// other rather than guess; where the directory has no template, its error wraps [ErrNoTemplate].
// [TemplateNamed] gives a template by name, for a model without a tokenizer_config.json.
package hftok
