// Package llama reads the Llama family of Hugging Face model directories (Llama 3, Qwen2,
// Qwen3): config.json, generation_config.json and the safetensors weights, single or sharded,
// in float32, bfloat16 or float16.
package llama
