//go:build race

package bulkhead

// raceOn reports whether the race detector is on, under which a goroutine
// costs many times as much.
const raceOn = true
