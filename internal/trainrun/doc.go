// Package trainrun holds the machinery of vkgrad train that needs no command-line state.
//
// The command reads its flags into plain values and calls in here; nothing in this package
// knows about flags beyond the names its errors use to tell a person which one to change.
//
//   - [Memory] checks that a run's footprint fits the device before anything is allocated,
//     and prints it alone for --dry-run.
//   - [ModelChoice] makes the run's [Model]: the resumed run's shape, --init's model or a new
//     one of --preset's shape, with the tokenizer its corpus needs ([CorpusTokenizer]).
//   - [Data] is the run's text, tokenised through the token cache ([TokenCacheDir]); eval reads
//     a run's the same way.
//   - [Loop] takes a trainer from its current step to its last through internal/runloop:
//     validation, checkpoints, one metrics line per step ([StepLine]) and the progress bar.
package trainrun
