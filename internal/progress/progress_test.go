package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestPlainLinesWithETA(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, 10)
	clock := b.start
	b.now = func() time.Time { return clock }
	for i := 1; i <= 10; i++ {
		clock = clock.Add(6 * time.Second)
		b.Update(i, "loss 1.0")
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// Every 10 s at most, plus the final line: steps 1, 3, 5, 7, 9 and 10.
	if len(lines) != 6 {
		t.Fatalf("got %d lines:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "1/10") || !strings.Contains(lines[0], "ETA 54s") {
		t.Errorf("first line %q: want 1/10 with ETA 54s", lines[0])
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "10/10 (100%)") || !strings.Contains(last, "1m00s elapsed") {
		t.Errorf("last line %q", last)
	}
}

// On a narrow terminal the redrawn line is cut to the width, so it never wraps and scrolls.
func TestFitsTheTerminalWidth(t *testing.T) {
	var b strings.Builder
	bar := &Bar{w: &b, total: 10, tty: true, width: 28, cols: 40, now: time.Now, interval: 0}
	bar.start = bar.now()
	bar.Update(3, "loss 4.21 | 1530 tok/s | a long status that would wrap")
	line := strings.TrimPrefix(b.String(), "\r\033[K")
	if n := utf8.RuneCountInString(line); n != 39 {
		t.Errorf("line of %d characters on a 40-column terminal: %q", n, line)
	}
	if got := fit("short", 40); got != "short" {
		t.Errorf("fit cut a short line: %q", got)
	}
	if got := fit("ab€cd", 4); got != "ab€" {
		t.Errorf("fit counts characters, not bytes: %q", got)
	}
}
