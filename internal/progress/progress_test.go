package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
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
