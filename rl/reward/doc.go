// Package reward holds the rewards a run names: verifiers and an external reward program.
//
// The verifiers score completions without writing Go (exact and numeric answers, regular
// expressions, JSON formats, length); the external reward process speaks one JSON line per
// batch. Both are rl.Reward values to combine with weights.
package reward
