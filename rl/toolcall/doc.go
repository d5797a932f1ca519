// Package toolcall finds the tool calls in the decoded text of an assistant turn.
//
// [Parse] reads the calls in the model family's [Format]: [Hermes] `<tool_call>` JSON (Qwen2.5,
// Qwen3, and models without a chat template), or [Llama31], Llama 3.1's whole-turn JSON. Only
// text after the last `</think>` is read. A call that does not parse is kept, as a [Call] with
// no name and its raw text, and counted, so the environment can answer it.
//
// [SchemaSpans] gives the byte ranges ([Span]) of a call's fixed parts (tags, JSON
// punctuation, the envelope's keys), which carry no choice of the model's.
package toolcall
