// Package tasks supplies the prompts of RL fine-tuning and SFT: datasets and generated tasks.
//
// # Sources
//
// A [Source] yields [Prompt] values one at a time: a [Generator] draws problems of a [Task],
// a [List] serves a fixed set, and a [Mixer] draws from several sources by ratio.
// [LoadDataset] reads a dataset file (JSON Lines, a JSON array or Parquet, in Hugging Face
// TRL's field names), and [LoadJSONL] a simpler JSONL format. [RLSource] and [RLPrompts] hand
// prompts to the trainers of [rl], encoded by an [Encoder].
//
// Every source is deterministic given its seed, so a run is reproducible and a resumed run can
// replay its prompt stream, or restore a [Stateful] source's position.
//
// # Built-in tasks
//
// [Builtin] returns a built-in verifiable task by name ([BuiltinNames]), small enough for a tiny
// GPT-2 to learn on a CPU: multi-digit addition ([Addition]) and copying or reversing a short
// letter string ([Copy]). Each splits its problem space by a hash of the problem into [Train] and
// held-out [Test] problems, so evaluation never sees a training problem, and scores its own
// completions. [NewMix] builds a [Mix] of tasks from a spec such as "addition:0.8,reverse:0.2",
// with its source, held-out prompts and a [TaskReward] that scores the mixture.
package tasks
