package testharness

import "syscall"

// sysProcAttr asks the kernel to SIGKILL a server the test started when the
// test binary dies.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
