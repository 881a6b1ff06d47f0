//go:build !linux

package embedded

import "syscall"

// sysProcAttr: without Pdeathsig outside Linux, an orphan left by a kill -9
// is found through the pid file and killed at the next start (reapStale).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// lowerPriority is Linux only (per-thread nice values read from /proc).
func lowerPriority(pid, nice int) error { return nil }
