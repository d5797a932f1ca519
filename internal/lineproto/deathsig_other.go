//go:build !linux

package lineproto

import "os/exec"

// startCmd starts cmd; only Linux has a parent-death signal to keep to a thread.
func startCmd(cmd *exec.Cmd) error { return cmd.Start() }
