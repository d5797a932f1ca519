package runloop

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// interruptSignals end a run with a checkpoint: Ctrl-C and SIGTERM (what schedulers and
// container runtimes send before killing a job).
var interruptSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// InterruptContext is cancelled by Ctrl-C or SIGTERM. A command takes it as its steps begin, so
// that a signal before them still ends the process at once.
func InterruptContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), interruptSignals...)
}
