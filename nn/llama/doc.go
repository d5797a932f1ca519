// Package llama is the Llama family of language models: Llama 3, Qwen2, Qwen2.5 and Qwen3.
//
// # Reading models
//
// [Load] reads a Hugging Face model directory onto a [tensor.Backend]: [ReadConfig] reads
// config.json and generation_config.json into a [Config], refusing features it does not
// implement by name, and [LoadWeights] reads the safetensors weights, single or sharded, in
// float32, bfloat16 or float16. [Preset] gives named shapes for models built from scratch with
// [New]. [Model.Export] writes a model back as a Hugging Face directory.
//
// # The model
//
// A [Model] holds its parameters in one flat buffer in [Config.ParamSpecs] order; its forward
// and backward run on an [autograd.Tape]. [Model.NewDecoder] returns a key/value-cache
// [Decoder] for sampling, and [Model.NewSelectedHead] a [SelectedHead] that computes log-probs
// at chosen positions only. [EstimateFootprint] sizes a model and its batches in memory;
// [Model.Recompute] trades a little backward compute for less activation memory, with the same
// bits ([EstimateFootprintWith] sizes it).
//
// # LoRA
//
// [Model.EnableLoRA] adds low-rank adapters, as a [LoRAConfig] says, to the linear layers it
// targets among [LoRAModules]; only the adapters then train. [Model.MergeLoRA] folds them into
// the weights.
package llama
