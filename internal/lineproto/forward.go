package lineproto

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// Forward copies r's lines to w, each prefixed, until r ends. A line over max bytes is cut to
// max with a note of its length, and reading goes on whatever w does: a program whose
// standard error is not read blocks once the pipe is full.
func Forward(r io.Reader, w io.Writer, prefix string, max int) {
	br := bufio.NewReaderSize(r, 64<<10)
	var kept []byte
	n := 0 // bytes of the current line so far
	for {
		chunk, err := br.ReadSlice('\n')
		n += len(chunk)
		if room := max - len(kept); room > 0 {
			kept = append(kept, chunk[:min(room, len(chunk))]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if n > 0 {
			if err == nil {
				n-- // the newline
			}
			writeLine(w, prefix, kept, n, max)
		}
		if err != nil {
			return
		}
		kept, n = kept[:0], 0
	}
}

// writeLine writes one forwarded line of n bytes of which kept holds the first ones, as one
// Write so that lines from several writers do not interleave.
func writeLine(w io.Writer, prefix string, kept []byte, n, max int) {
	text := bytes.TrimRight(kept, "\r\n")
	if n > max {
		fmt.Fprintf(w, "%s%s ... (a line of %d bytes, cut to %d)\n", prefix, text, n, max)
		return
	}
	fmt.Fprintf(w, "%s%s\n", prefix, text)
}
