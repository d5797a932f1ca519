// Package data reads the token streams language models train on and cuts them into batches.
//
// # Token files and corpora
//
// [ReadTokenFile] and [WriteTokenFile] handle llm.c's token files. A [TextSource] names a
// raw-text corpus, one file or a folder walked in a fixed order; [TextSource.Load] tokenises it
// in parallel, with GPT-2's tokenizer or another [Encoder], and can cache the result as a token
// file so an unchanged corpus is not tokenised again. [LoadCorpus] takes either kind of file,
// recognising a token file by its magic number. [GoSourceCorpus] is the default corpus, the
// Go standard library's source.
//
// # Batches
//
// [NewLoaders] splits a token stream into a training and a validation [Loader] (at the tail or
// interleaved in blocks, as [ValMode] says). A Loader yields (B, T) batches of inputs and
// targets, shuffled per epoch from a seed unless asked not to, and its [LoaderState] lets a
// resumed run continue at the same position.
package data
