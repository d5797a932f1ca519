//go:build unix

package reward

import (
	"os/exec"
	"syscall"
)

// ownGroup puts the program in a process group of its own, so that killing it also ends what
// its shell started.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
