// Package env holds the environments of multi-turn RL episodes: the Env interface a trainer
// drives (reset from a dataset row and a seed, one step per assistant turn, close), ToolEnv,
// which answers a turn's tool calls with Go functions, and the built-in environments
// calculator and guess, found by name with Lookup.
//
// The types marshal as the environment protocol's JSON, so an environment in another process
// speaks the same shapes: Turn is a step request's body, StepResult its reply, ResetResult a
// reset's reply.
package env
