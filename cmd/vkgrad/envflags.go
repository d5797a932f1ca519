package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/rl/env"
)

// addEnvFlags registers the environment flags with e's values as defaults.
func addEnvFlags(fs *pflag.FlagSet, e *rlrun.Env) {
	l := &e.Limits
	fs.StringVar(&e.Name, "env", e.Name, "run each prompt as a multi-turn episode in this built-in environment ("+strings.Join(env.Names(), ", ")+"); --max-new-tokens is then per turn and --reward defaults to env (the episode's return)")
	fs.StringVar(&e.Cmd, "env-cmd", e.Cmd, "run each prompt as a multi-turn episode in an environment served by this program (run by the shell; one JSON object a line on its stdin and stdout, see the README); excludes --env")
	fs.IntVar(&e.Workers, "env-workers", e.Workers, "with --env-cmd: processes started, each episode staying on one")
	fs.IntVar(&l.MaxTurns, "max-turns", l.MaxTurns, "with --env: most assistant turns an episode has")
	fs.IntVar(&l.MaxEpisodeTokens, "max-episode-tokens", l.MaxEpisodeTokens, "with --env: most tokens of an episode (prompt, turns and the environment's replies; the model's context caps it too)")
	fs.IntVar(&l.MaxToolOutputTokens, "max-tool-output-tokens", l.MaxToolOutputTokens, "with --env: most tokens of one tool message, cut as --tool-output-truncate says (0: no cap)")
	fs.StringVar(&l.ToolOutputTruncate, "tool-output-truncate", l.ToolOutputTruncate, "with --env: what goes from a long tool output: left (keeps its end), right (keeps its start) or middle (keeps both ends)")
	fs.DurationVar(&l.EnvTimeout, "env-timeout", l.EnvTimeout, "with --env: longest one environment call may take, which then fails its episode (0: no bound)")
	fs.DurationVar(&l.EpisodeTimeout, "episode-timeout", l.EpisodeTimeout, "with --env: longest wall time of one episode (0: no bound; a bound makes runs depend on the machine's speed)")
	fs.IntVar(&l.RejoinSteps, "rejoin-steps", l.RejoinSteps, "with --env: decoder steps an episode sits out after each environment call while the others decode")
	fs.BoolVar(&e.MaskToolSyntax, "mask-tool-syntax", e.MaskToolSyntax, "with --env: leave the fixed parts of tool calls (tags, JSON punctuation, keys) off the loss")
}
