//go:build (!amd64 && !arm64) || purego

package cpu

func swigluVector(out, gate, up []float32) int                      { return 0 }
func swigluBackwardVector(dgate, dup, gate, up, dout []float32) int { return 0 }
