package timing

import (
	"errors"
	"testing"
	"time"
)

// TestGrow: work of a microsecond per unit is grown past a millisecond in few steps, after an
// uncounted first run that is slow (a pipeline being built); work the clock cannot see is
// grown to MaxSize and no further; run's error ends the growth.
func TestGrow(t *testing.T) {
	var sizes []int
	size, took, err := Grow(time.Millisecond, func(n int) (time.Duration, error) {
		sizes = append(sizes, n)
		if len(sizes) == 1 {
			return time.Second, nil
		}
		return time.Duration(n) * time.Microsecond, nil
	})
	if err != nil || size < 1000 || took != time.Duration(size)*time.Microsecond || len(sizes) > 4 {
		t.Errorf("size %d took %v err %v after sizes %v: want at least 1000 units, that run's time, in at most 1+3 runs", size, took, err, sizes)
	}
	calls := 0
	size, _, err = Grow(time.Millisecond, func(int) (time.Duration, error) { calls++; return 0, nil })
	if err != nil || size != MaxSize || calls != 7 {
		t.Errorf("work the clock cannot see: size %d after %d calls (err %v), want %d after 1+6 (16x each)", size, calls, err, MaxSize)
	}
	boom := errors.New("boom")
	if _, _, err := Grow(time.Millisecond, func(int) (time.Duration, error) { return 0, boom }); err != boom {
		t.Errorf("err %v, want run's", err)
	}
}

// TestRun: Run's time covers work and wait; work's error is returned without waiting.
func TestRun(t *testing.T) {
	waited := false
	took, err := Run(func() error { time.Sleep(2 * time.Millisecond); return nil },
		func() error { time.Sleep(3 * time.Millisecond); waited = true; return nil })
	if err != nil || !waited || took < 5*time.Millisecond {
		t.Errorf("took %v, waited %v, err %v: want both timed", took, waited, err)
	}
	boom := errors.New("boom")
	waited = false
	if _, err := Run(func() error { return boom }, func() error { waited = true; return nil }); err != boom || waited {
		t.Errorf("err %v, waited %v: want work's error and no wait", err, waited)
	}
}
