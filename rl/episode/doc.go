// Package episode runs multi-turn episodes of a policy and an environment, token in and token out.
//
// The policy writes a turn, an environment answers, and the conversation goes on.
//
// # Tokens
//
// An episode's tokens are its prompt, then each sampled turn followed by the environment's
// reply as the chat template renders it (a [Renderer]'s delta), encoded once. Nothing sampled
// is ever decoded and encoded again: the tokens trained are the tokens drawn. Each episode
// keeps one decoder row for its whole life, and each reply is prefilled onto the row's cache
// after the turn, never the conversation so far.
//
// # Schedule
//
// Episodes share the decoder's rows with continuous batching. After a turn, an episode sits
// out [Config.RejoinSteps] decoder steps while its environment answers; the other episodes
// keep decoding. Which rows share each step therefore depends on the seed and the
// environments' answers, never on how long the answers took (unless a timeout fires), so a
// seed fixes every episode on the CPU.
package episode
