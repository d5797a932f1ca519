package rl

import "github.com/vkgrad/vkgrad/nn/sample"

// samplerOptions are s, or greedy decoding (s unused). nn/sample's Picker draws from exactly
// the distribution objective.SampleToken describes, faster, and reports the cutoff the loss
// needs to replay the truncation.
func samplerOptions(s sample.Options, greedy bool) sample.Options {
	if greedy {
		return sample.Options{Temperature: 0, TopP: 1}
	}
	return s
}
