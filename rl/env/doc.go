// Package env holds the environments of multi-turn RL episodes.
//
// An Env is one episode: the trainer resets it from a dataset row and a seed, steps it with
// each assistant turn (its text and parsed tool calls) and closes it. ToolEnv answers tool
// calls with Go functions. Lookup finds the built-in environments:
//
//   - calculator: a question with large numbers, the tool calculate (exact arithmetic), and
//     reward 1 when the first turn without tool calls ends with the row's "answer". A row
//     without an answer gets a problem made from the seed.
//   - guess: a number from 1 to 100 picked by the seed, guessed over up to GuessTurns turns
//     with "Higher." or "Lower." as the replies; no tools, and the row is not read.
//
// The types marshal as the environment protocol's JSON, so an environment in another process
// speaks the same shapes: Turn is a step request's body, StepResult its reply, ResetResult a
// reset's reply.
package env
