package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/rl/reward"
)

// addDatasetFlags registers the flags with d's values as defaults (setFlag re-registers them
// over a run's saved settings).
func addDatasetFlags(fs *pflag.FlagSet, d *rlrun.Dataset) {
	fs.StringVar(&d.Path, "dataset", d.Path, "prompts from a dataset instead of --task: a file, or a Hugging Face dataset ORG/NAME (a local path of that name wins; see --dataset-split), in JSON Lines, a JSON array or Parquet, each example with \"prompt\" (text or messages) or \"messages\" (tool calls and tool turns kept), optional \"answer\"/\"completion\" and \"tools\" (function specs for the chat template); other fields reach the rewards")
	fs.StringVar(&d.EvalPath, "eval-dataset", d.EvalPath, "held-out prompts for the accuracy before and after (default: --held-out-share of --dataset); a file, or a Hugging Face dataset ORG/NAME (see --eval-dataset-split)")
	addHubDatasetFlags(fs, "dataset", "train", &d.Hub)
	addHubDatasetFlags(fs, "eval-dataset", "test", &d.EvalHub)
	fs.StringVar(&d.Fields, "dataset-field", d.Fields, "the dataset's own field names, e.g. prompt=question,answer=final_answer")
	fs.Float64Var(&d.HeldOut, "held-out-share", d.HeldOut, "with --dataset and no --eval-dataset, the share of distinct prompts held out for evaluation (at least one; chosen by --eval-seed, whatever the file's order)")
	fs.StringVar(&d.Reward, "reward", d.Reward, "with --dataset, verifiers and weights, e.g. numeric:1,format:0.2 (verifiers: "+strings.Join(reward.Names, ", ")+"; default exact, or only --reward-cmd)")
	fs.StringVar(&d.RewardCmd, "reward-cmd", d.RewardCmd, "an external reward program (run by the shell): one JSON line per batch in, {\"id\",\"prompts\",\"completions\",\"metadata\"}; one line back, {\"rewards\": [...]} (echo \"id\" to have the pairing checked), nothing else on stdout; weighted by cmd:W in --reward")
	fs.DurationVar(&d.RewardTimeout, "reward-timeout", d.RewardTimeout, "how long --reward-cmd may take to answer one batch")
	fs.StringVar(&d.Options.Regex, "reward-regex", d.Options.Regex, "the regex verifier's pattern; {answer} stands for the answer field")
	fs.StringVar(&d.Options.FormatRegex, "format-regex", d.Options.FormatRegex, "the format reward: the whole completion matches this pattern")
	fs.StringSliceVar(&d.Options.JSONKeys, "format-json-keys", d.Options.JSONKeys, "the format reward: the completion is a JSON object with these keys (in <tool_call> or a ``` fence, or bare)")
	fs.IntVar(&d.Options.TargetLength, "target-length", d.Options.TargetLength, "the length penalty: characters allowed before it starts")
}

// addHubDatasetFlags registers the flags choosing the split of a Hugging Face dataset that
// flag --NAME names; split is the default split.
func addHubDatasetFlags(fs *pflag.FlagSet, name, split string, h *rlrun.HubDataset) {
	fs.StringVar(&h.Split, name+"-split", h.Split, "the split of a Hugging Face dataset --"+name+" ORG/NAME (default "+split+")")
	fs.StringVar(&h.Config, name+"-config", h.Config, "the config (subset) of a Hugging Face dataset --"+name+" ORG/NAME (default: the one the dataset card marks default, else its only one, else \"default\")")
	fs.StringVar(&h.Revision, name+"-revision", h.Revision, "branch, tag or commit of a Hugging Face dataset --"+name+" ORG/NAME (default main): looked up in the Hugging Face cache ($HF_HUB_CACHE), else downloaded into it from the Hub ($HF_ENDPOINT, $HF_TOKEN; HF_HUB_OFFLINE=1: the cache only)")
}
