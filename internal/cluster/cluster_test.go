package cluster

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/vkgrad/vkgrad/vk"
)

func TestDeviceForTakesTheLocalRanksGPURoundRobin(t *testing.T) {
	devs := []vk.DeviceInfo{
		{Index: 0, Type: vk.DeviceCPU},
		{Index: 1, Type: vk.DeviceDiscrete},
		{Index: 2, Type: vk.DeviceIntegrated},
	}
	for rank, want := range []string{"vulkan:1", "vulkan:2", "vulkan:1"} {
		if got := deviceFor(devs, rank); got != want {
			t.Errorf("local rank %d: got %q, want %q", rank, got, want)
		}
	}
	if got := deviceFor(devs[:1], 3); got != "cpu" {
		t.Errorf("no GPU: got %q, want cpu", got)
	}
	if got := deviceFor(nil, 0); got != "cpu" {
		t.Errorf("no device: got %q, want cpu", got)
	}
}

func TestNilMemberIsALoneProcess(t *testing.T) {
	var m *Member
	if !m.Main() {
		t.Error("Main: a lone process writes the run's files")
	}
	if m.Comm() != nil {
		t.Error("Comm: want nil")
	}
	for _, local := range []bool{false, true} {
		if stop, err := m.AnyStop(local); stop != local || err != nil {
			t.Errorf("AnyStop(%v) = %v, %v; want %v, nil", local, stop, err, local)
		}
	}
	if err := m.CheckSpread("--micro-batches 1", 1); err != nil {
		t.Errorf("CheckSpread: %v", err)
	}
	if err := m.Barrier(); err != nil {
		t.Errorf("Barrier: %v", err)
	}
	if err := m.Leave(true); err != nil {
		t.Errorf("Leave: %v", err)
	}
	if p := m.ErrorPrefix(); p != "" {
		t.Errorf("ErrorPrefix = %q, want empty", p)
	}
	if got := m.Cores(); got != runtime.NumCPU() {
		t.Errorf("Cores = %d, want %d", got, runtime.NumCPU())
	}
}

func TestCoresShareTheMachine(t *testing.T) {
	m := &Member{localSize: 2 * runtime.NumCPU()}
	if got := m.Cores(); got != 1 {
		t.Errorf("more ranks than cores: Cores = %d, want 1", got)
	}
	m.localSize = 1
	if got := m.Cores(); got != runtime.NumCPU() {
		t.Errorf("one rank: Cores = %d, want %d", got, runtime.NumCPU())
	}
}

func TestAgreedStopKeepsItsError(t *testing.T) {
	cause := errors.New("saving failed")
	err := fmt.Errorf("step 3: %w", AgreedStop{Err: cause})
	if !errors.As(err, new(AgreedStop)) {
		t.Fatal("errors.As does not find the AgreedStop")
	}
	if !errors.Is(err, cause) {
		t.Error("the AgreedStop does not unwrap to its error")
	}
	if got, want := err.Error(), "step 3: saving failed"; got != want {
		t.Errorf("Error = %q, want %q", got, want)
	}
}
