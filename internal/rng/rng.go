// Package rng is a small deterministic random number generator whose state a checkpoint can hold.
//
// An [RNG] is xoshiro256**, seeded through splitmix64 by [New], or by [Keyed] from several keys
// (a run's seed, a step, a row) so that work split between processes in any way draws the same
// numbers. [RNG.State] and [RNG.SetState] save and restore its whole state, so a resumed run
// draws the same numbers as an uninterrupted one.
package rng

import (
	"fmt"
	"math"
	"math/bits"
)

// RNG is not safe for concurrent use.
type RNG struct{ s [4]uint64 }

// New returns a generator seeded from seed.
func New(seed uint64) *RNG {
	r := &RNG{}
	x := seed
	for i := range r.s {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		r.s[i] = z ^ (z >> 31)
	}
	return r
}

// Keyed returns a generator seeded from several keys (a run's seed, a step, a row): the
// stream depends on all of them and on nothing else, so work can be split between processes
// in any way and draw the same numbers.
func Keyed(keys ...uint64) *RNG {
	var x uint64
	for _, k := range keys {
		x = splitmix(x ^ k)
	}
	return New(x)
}

// splitmix is splitmix64's output function after its increment.
func splitmix(x uint64) uint64 {
	z := x + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Uint64 returns the next 64 random bits.
func (r *RNG) Uint64() uint64 {
	s := &r.s
	result := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return result
}

// Float64 is uniform in [0, 1).
func (r *RNG) Float64() float64 { return float64(r.Uint64()>>11) * (1.0 / (1 << 53)) }

// Float32 is uniform in [0, 1).
func (r *RNG) Float32() float32 { return float32(r.Uint64()>>40) * (1.0 / (1 << 24)) }

// Intn is uniform in [0, n); n must be positive.
func (r *RNG) Intn(n int) int {
	if n <= 0 {
		panic(fmt.Sprintf("rng: Intn(%d)", n))
	}
	hi, _ := bits.Mul64(r.Uint64(), uint64(n))
	return int(hi)
}

// Normal draws from N(0, 1) by the Box-Muller transform.
func (r *RNG) Normal() float64 {
	u1 := 1 - r.Float64() // (0, 1]
	u2 := r.Float64()
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// Perm returns a random permutation of [0, n).
func (r *RNG) Perm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	r.Shuffle(p)
	return p
}

// Shuffle permutes p in place (Fisher-Yates).
func (r *RNG) Shuffle(p []int) {
	for i := len(p) - 1; i > 0; i-- {
		j := r.Intn(i + 1)
		p[i], p[j] = p[j], p[i]
	}
}

// State returns the generator state for a checkpoint.
func (r *RNG) State() []uint64 { return append([]uint64(nil), r.s[:]...) }

// SetState restores a state returned by State.
func (r *RNG) SetState(s []uint64) error {
	if len(s) != 4 {
		return fmt.Errorf("rng: state has %d words, want 4", len(s))
	}
	if s[0]|s[1]|s[2]|s[3] == 0 {
		return fmt.Errorf("rng: all-zero state")
	}
	copy(r.s[:], s)
	return nil
}
