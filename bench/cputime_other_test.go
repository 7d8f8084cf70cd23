//go:build !linux

package bench

import "time"

// threadCPU is unknown here: the CPU-time rows read 0.
func threadCPU() time.Duration { return 0 }
