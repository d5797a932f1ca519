//go:build !unix

package progress

import "io"

// columns is the width of the terminal w writes to, 0 when it is unknown.
func columns(io.Writer) int { return 0 }
