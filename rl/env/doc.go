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
//
// # Environments in another process
//
// Processes runs an environment written in any language (testdata/guess_env.py is an example
// in Python). Each worker process reads one JSON object a line on standard input and writes
// one reply line on standard output per request, in order; anything else goes to standard
// error, which is forwarded to the log. Episodes are interleaved by id ("e17"), each staying
// on one process; every request carries "id" (see internal/lineproto), which a reply should
// echo. The requests and their replies:
//
//	{"op": "reset", "episode": "e17", "seed": 42, "sample": 0, "example": {row} or null}
//	  -> {"messages": [...], "tools": [...]}
//	{"op": "step", "episode": "e17", "turn": 0, "text": "...", "truncated": false,
//	 "tool_calls": [{"name": "f", "arguments": {...}} or {"name": null, "raw": "..."}]}
//	  -> {"messages": [{"role": "tool" or "user", "content": "..."}], "reward": 0.0,
//	      "done": false, "info": {...}}
//	{"op": "close", "episode": "e17"} -> {}
//
// Every member of a reply may be left out: reward 0, done false, no messages; "tools" left
// out or null keeps the row's tools, [] offers none. A reset's messages are "system", "user"
// or "assistant"; a step's are "tool" or "user", and a tool message with "error": true is a
// failed call. The seed is below 2^53, so that every JSON reader holds it exactly. A reply
// may echo "episode" and "turn"; one that does must echo its request's. A reply
// {"error": "..."} ends its episode; so does one that breaks these rules (a member no reply
// has, such as a misspelt "rewards"; a reward that is not a finite number), each an error
// wrapping ErrEnv that names the member and quotes the line. A member of another kind of reply
// ("info" with a reset) and a message's members beyond role, content and error ("name",
// "tool_call_id") are ignored. Every episode whose reset reached a process gets a close on it,
// however it ended, unless that process was started again since.
//
// A process that crashes, writes a line that is not a JSON object, echoes another episode or
// turn, writes a line no request asked for or does not answer within the timeout is killed
// and started again; the episodes open on it end with ErrEnv errors.
package env
