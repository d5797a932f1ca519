package sample

import "github.com/vkgrad/vkgrad/internal/rng"

// RNG is the sampler's random generator: a seed fixes every draw, whatever the number of CPUs.
type RNG = rng.RNG

// NewRNG returns a generator seeded with seed, for Generate.
func NewRNG(seed uint64) *RNG { return rng.New(seed) }

// DefaultOptions samples at temperature 1 from the whole distribution. The zero Options is
// greedy decoding.
func DefaultOptions() Options { return Options{Temperature: 1, TopP: 1} }
