// Package progress reports the progress of a long job as a bar on a terminal or as plain lines.
//
// A [Bar] made by [New] shows the work done of its total, a status line the caller supplies
// (a loss, a rate, ...), the time elapsed and an estimate of the time left. When [IsTerminal]
// finds a terminal it redraws one line in place; when the output is a file or a CI log it
// writes a plain line at intervals instead.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Bar tracks work of a known total.
type Bar struct {
	w        io.Writer
	total    int
	tty      bool
	start    time.Time
	last     time.Time
	interval time.Duration
	width    int
	cols     int // the terminal's width (0: unknown); a longer line would wrap and scroll
	drawn    bool
	now      func() time.Time
}

// New returns a bar writing to w; terminal detection decides between redrawing and lines.
func New(w io.Writer, total int) *Bar {
	b := &Bar{w: w, total: total, tty: IsTerminal(w), width: 28, now: time.Now}
	b.interval = 10 * time.Second
	if b.tty {
		b.interval = 100 * time.Millisecond
		b.cols = columns(w)
	}
	b.start = b.now()
	return b
}

// IsTerminal reports whether w is a character device such as a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Update shows done of total with a caller-supplied status (e.g. "loss 4.21 | 1530 tok/s").
func (b *Bar) Update(done int, status string) {
	now := b.now()
	final := done >= b.total
	if !final && now.Sub(b.last) < b.interval && b.drawn {
		return
	}
	b.last = now
	b.drawn = true
	elapsed := now.Sub(b.start)
	eta := "?"
	if done > 0 {
		eta = formatDuration(time.Duration(float64(elapsed) * float64(b.total-done) / float64(done)))
	}
	frac := float64(done) / float64(max(b.total, 1))
	if b.tty {
		filled := int(frac * float64(b.width))
		bar := strings.Repeat("=", filled)
		if filled < b.width {
			bar += ">" + strings.Repeat(" ", b.width-filled-1)
		}
		line := fmt.Sprintf("%d/%d [%s] %3.0f%% | %s | %s elapsed, ETA %s", done, b.total, bar, 100*frac, status, formatDuration(elapsed), eta)
		fmt.Fprintf(b.w, "\r\033[K%s", fit(line, b.cols))
		if final {
			fmt.Fprintln(b.w)
		}
		return
	}
	fmt.Fprintf(b.w, "%d/%d (%3.0f%%) | %s | %s elapsed, ETA %s\n", done, b.total, 100*frac, status, formatDuration(elapsed), eta)
}

// fit cuts line to cols-1 characters, so redrawing never wraps onto a new line; cols 0 leaves
// it whole.
func fit(line string, cols int) string {
	if cols <= 1 {
		return line
	}
	r := []rune(line)
	if len(r) < cols {
		return line
	}
	return string(r[:cols-1])
}

// Clear erases the bar line on a terminal so a log line can be printed cleanly.
func (b *Bar) Clear() {
	if b.tty && b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
		b.last = time.Time{}
	}
}

func formatDuration(d time.Duration) string {
	d = d.Round(time.Second)
	if d >= time.Hour {
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	if d >= time.Minute {
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}
