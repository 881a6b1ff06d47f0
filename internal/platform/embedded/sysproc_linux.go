package embedded

import "syscall"

// sysProcAttr puts the child in its own process group, so a Ctrl-C in the
// terminal reaches only us and we stop the children in order (after the
// history sink flushed), and asks the kernel to SIGKILL the child when we
// die, so a kill -9 of switchback leaves no orphan.
//
// Pdeathsig fires when the OS thread that forked the child exits, not only
// the process. The Go runtime retires threads only when a goroutine exits
// while locked to its thread (runtime.LockOSThread without Unlock); nothing
// in this process does that on the goroutines that start children.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
