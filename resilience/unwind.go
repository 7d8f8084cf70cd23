package resilience

import "runtime"

// unwinding reports whether its caller runs in a deferred call made for a
// panic or a runtime.Goexit: whether the runtime's function that runs the
// deferred calls (runtime.gopanic, runtime.Goexit) is on the stack,
// within the few frames a deferred function that calls EndPanicked
// leaves between them. It walks the stack: a rare path's test only.
func unwinding() bool {
	var pcs [32]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	for {
		f, more := frames.Next()
		switch f.Function {
		case "runtime.gopanic", "runtime.Goexit":
			return true
		}
		if !more {
			return false
		}
	}
}
