//go:build (!amd64 && !arm64) || purego

package cpu

// geluAVX512 is false: there are no vector kernels in this build.
var geluAVX512 = false

func geluForward(out, inp []float32)         { geluForwardGo(out, inp) }
func geluBackward(dinp, inp, dout []float32) { geluBackwardGo(dinp, inp, dout) }
