//go:build (!amd64 && !arm64) || purego

package cpu

func sumLanesVector(x []float32, acc *[16]float64, squares bool) int { return 0 }

func colSumVector(db, d []float32, rows, stride int) int { return 0 }

func lnColVector(dw, db, x, d, mean, rstd []float32, rows, stride int) int { return 0 }

func fillStream(x []float32, v float32) { fillLoop(x, v) }
