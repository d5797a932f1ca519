// Package checkpoint saves and loads vkgrad's training checkpoints, to continue a run bit for bit.
//
// A checkpoint holds a [State]: a model's parameters, optionally its AdamW moments and other
// buffers, and the trainer's step, optimizer settings, random-generator state and free-form
// metadata. [Save] writes one and [Load] reads it back; [Peek] reads only its metadata.
// [SaveGPT2] and [SaveLlama] write a model's weights alone, a checkpoint that the commands and
// nn/load accept as a model.
//
// # File format
//
// A checkpoint is a safetensors file. Its tensors are the model's parameters, GPT-2's under
// their llm.c names (wte, wpe, ln1w, ...) and a Llama-family model's under their Hugging Face
// names, followed by its LoRA adapters when it has some; then, when the state has optimizer
// moments, "adam_m.<name>" and "adam_v.<name>" for each trained tensor, and "extra.<name>" for
// each further buffer. The "__metadata__" entry [MetadataKey] holds a JSON document with the
// format name [Format], its version ([Version]: 1 for a GPT-2, 2 for a Llama-family model), the
// model's configuration, the step, the optimizer's hyper-parameters, the RNG state and the
// trainer's map.
//
// # Atomic saves
//
// [Save] writes the file under a temporary name in the target's directory, syncs it, renames it
// over the target and syncs the directory, so a crash leaves either the old checkpoint or the
// new one, never a torn file.
package checkpoint
