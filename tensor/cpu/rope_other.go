//go:build (!amd64 && !arm64) || purego

package cpu

func ropeVector(o, x, cos, sin []float32) int          { return 0 }
func ropeBackwardVector(dx, g, cos, sin []float32) int { return 0 }
