//go:build unix

package lineproto

import (
	"os/exec"
	"syscall"
)

// ownGroup puts the program in a process group of its own, so that killing the group also
// ends what its shell started, and on Linux has the kernel kill the program if vkgrad dies.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
}

// killGroup kills every process left in the program's group; a group already empty is no error.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
