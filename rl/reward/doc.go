// Package reward holds the verifiers that score completions without writing Go (exact and
// numeric answers, regular expressions, JSON formats, length) and an external reward process
// that speaks one JSON line per batch, all as rl.Reward values to combine with weights.
package reward
