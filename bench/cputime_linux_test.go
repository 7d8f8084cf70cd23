package bench

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU returns the CPU time the calling thread has used. A call's
// share of it, unlike its wall time, leaves out the time the operating
// system gave the CPU to another process: on a shared machine that is
// what separates the cost of a step from the machine's stalls. The caller
// locks its goroutine to its thread.
func threadCPU() time.Duration {
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
