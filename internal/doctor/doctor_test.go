package doctor

import (
	"testing"
	"time"
)

func TestDoctorProbeBound(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	_, err := bounded(10*time.Millisecond, func() (int, error) { <-release; return 1, nil })
	if err == nil || err.Error() != "no answer within 10ms" {
		t.Errorf("hung probe: %v", err)
	}
	_, err = bounded(time.Second, func() (int, error) { panic("boom") })
	if err == nil || err.Error() != "probe failed: boom" {
		t.Errorf("panicking probe: %v", err)
	}
	if v, err := bounded(time.Second, func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Errorf("quick probe: %d, %v", v, err)
	}
}
