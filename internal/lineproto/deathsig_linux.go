package lineproto

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// setParentDeathSignal has the kernel SIGKILL the program when vkgrad dies, even by SIGKILL.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// spawner starts programs on one OS thread that never exits: the parent-death signal follows
// the thread that started the child, not the process, and Go ends a thread when a goroutine
// locked to it returns (the MPI thread does), which would kill a program started from it.
var spawner struct {
	once sync.Once
	work chan func()
}

// startCmd starts cmd from the spawner's thread.
func startCmd(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.work = make(chan func())
		go func() {
			runtime.LockOSThread()
			for f := range spawner.work {
				f()
			}
		}()
	})
	errc := make(chan error, 1)
	spawner.work <- func() { errc <- cmd.Start() }
	return <-errc
}
