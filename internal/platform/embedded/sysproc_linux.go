package embedded

import (
	"os"
	"strconv"
	"syscall"
)

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

// lowerPriority sets the nice value of every thread of process pid (on
// Linux a nice value belongs to a thread; threads started later inherit
// their creator's). Best effort: a thread that exits meanwhile is skipped.
func lowerPriority(pid, nice int) error {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return err
	}
	var first error
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && err != syscall.ESRCH && first == nil {
			first = err
		}
	}
	return first
}
