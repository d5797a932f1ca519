package workpool

import (
	"testing"
	"time"
)

func TestSpinReceiveWhilePolling(t *testing.T) {
	ch := make(chan int)
	go func() { ch <- 7 }()
	v, ok := receive(ch, time.Second)
	if !ok || v != 7 {
		t.Fatalf("Receive = %d, %v; want 7, true", v, ok)
	}
}

func TestSpinReceiveAfterWindowBlocks(t *testing.T) {
	ch := make(chan int)
	go func() {
		time.Sleep(20 * time.Millisecond)
		ch <- 3
	}()
	// The window ends long before the send: Receive must block for the value, not give up.
	v, ok := receive(ch, time.Millisecond)
	if !ok || v != 3 {
		t.Fatalf("Receive = %d, %v; want 3, true", v, ok)
	}
}

func TestSpinReceiveClosed(t *testing.T) {
	for _, window := range []time.Duration{0, time.Millisecond} {
		ch := make(chan int, 1)
		ch <- 5
		close(ch)
		if v, ok := receive(ch, window); !ok || v != 5 {
			t.Fatalf("window %v: first Receive = %d, %v; want the buffered 5, true", window, v, ok)
		}
		if v, ok := receive(ch, window); ok || v != 0 {
			t.Fatalf("window %v: Receive on a drained closed channel = %d, %v; want 0, false", window, v, ok)
		}
	}
}
