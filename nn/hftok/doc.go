// Package hftok is the tokenizer of a Hugging Face model directory (tokenizer.json): byte-level
// BPE with its pre-tokenizer's split regex (lookaheads included), NFC normalisation, and added
// and special tokens matched before BPE, as Hugging Face tokenizers encodes and decodes.
package hftok
