package llama

import "math"

// InvFreq returns the rotary embedding's inverse frequencies, one per pair (i, i+D/2) of a
// head's dimensions: 1/theta^(2i/D), then rope_scaling. Computed in float64.
func (c Config) InvFreq() []float64 {
	half := c.HeadDim / 2
	out := make([]float64, half)
	for i := range out {
		out[i] = 1 / math.Pow(c.RopeTheta, float64(2*i)/float64(c.HeadDim))
	}
	s := c.RopeScaling
	if s == nil {
		return out
	}
	switch s.Type {
	case "linear":
		for i := range out {
			out[i] /= s.Factor
		}
	case "llama3":
		// Wavelengths shorter than L/high are kept, longer than L/low are divided by the
		// factor, and those between are blended linearly in L/wavelength.
		L := float64(s.OriginalMaxPositions)
		for i, f := range out {
			w := 2 * math.Pi / f
			switch {
			case w < L/s.HighFreqFactor:
			case w > L/s.LowFreqFactor:
				out[i] = f / s.Factor
			default:
				t := (L/w - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
				out[i] = (1-t)*f/s.Factor + t*f
			}
		}
	}
	return out
}
