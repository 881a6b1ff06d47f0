//go:build !linux

package testharness

import "syscall"

// sysProcAttr: outside Linux the servers are stopped by the tests'
// cleanups only.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
