package device

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// fakeValidation stands for a Vulkan instance: on says whether its layer is on, and handler
// is what the program registered.
type fakeValidation struct {
	on      bool
	handler func(string)
}

func (f *fakeValidation) Validation() bool                   { return f.on }
func (f *fakeValidation) OnValidationMessage(h func(string)) { f.handler = h }

// TestLogValidation: with the layer on, each message becomes a warning as it arrives, after
// one line saying the layer is on; with it off, nothing is registered or logged.
func TestLogValidation(t *testing.T) {
	var out bytes.Buffer
	log := zerolog.New(&out)
	off := &fakeValidation{}
	logValidation(off, log)
	if off.handler != nil || out.Len() != 0 {
		t.Fatalf("layer off: handler set %v, logged %q", off.handler != nil, out.String())
	}
	on := &fakeValidation{on: true}
	logValidation(on, log)
	if on.handler == nil {
		t.Fatal("layer on: no handler registered")
	}
	on.handler("error: Validation Error: [ VUID-VkBufferCreateInfo-size-00912 ] size is 0")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "VKGRAD_VALIDATION=1") ||
		!strings.Contains(lines[1], `"level":"warn"`) || !strings.Contains(lines[1], "VUID-VkBufferCreateInfo-size-00912") {
		t.Errorf("logged:\n%s", out.String())
	}
}
