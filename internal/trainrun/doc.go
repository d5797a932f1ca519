// Package trainrun runs vkgrad train from its settings: resume, model, data, run directory, loop.
//
// The command reads its flags into a [Config] and calls [Run] with the device to open and the
// logger ([Env]); nothing in this package knows about flags beyond the names its errors use to
// tell a person which one to change, and which ones [Config.Given] says were given.
//
//   - [Config.LoadResume] continues a run from its directory: its checkpoint, and the settings
//     of its config.json ([Meta]) that [Config.Adopt] takes over, refusing a flag given again
//     with another value than the one that decided the run's numbers.
//   - [Memory] checks that a run's footprint fits the device before anything is allocated,
//     and prints it alone for --dry-run.
//   - [ModelChoice] makes the run's [Model]: the resumed run's shape, --init's model or a new
//     one of --preset's shape, with the tokenizer its corpus needs ([CorpusTokenizer]).
//   - [Data] is the run's text, tokenised through the token cache ([TokenCacheDir]); eval reads
//     a run's the same way.
//   - [Loop] takes a trainer from its current step to its last through internal/runloop:
//     validation, checkpoints, one metrics line per step ([StepLine]) and the progress bar.
//     [Run] then says how a paused or interrupted run continues, or prints its summary.
package trainrun
