package rl

import (
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/rl/objective"
)

// The loss settings live in rl/objective beside the math they configure. The ones that are
// fields of rl's own configs, prompts and reports stay reachable here, so a trainer's user
// configures and reads a run from one package.
type (
	GRPOConfig      = objective.GRPOConfig
	PPOConfig       = objective.PPOConfig
	KLControlConfig = objective.KLControlConfig
	Action          = objective.Action
)

// Sampling is nn/sample's Options under the name rl's configs used before they took that type
// (RolloutConfig.Sampling, EvalConfig.Sampling).
type Sampling = sample.Options

// SFTStats describe one supervised step: nn/train's StepStats, so sft and train runs report
// the same quantities under the same names (Tokens: the tokens the loss counts).
type SFTStats = train.StepStats

// The step decisions a report carries (Action), and the Prompt.Template entry for a position
// the task leaves free.
const (
	Proceed  = objective.Proceed
	Skip     = objective.Skip
	Stop     = objective.Stop
	Unforced = objective.Unforced
)
