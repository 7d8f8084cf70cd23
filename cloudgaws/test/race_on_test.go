//go:build race

package test

// The race detector makes sync.Pool drop items at random, so a pooled
// object is sometimes allocated again.
const raceSlack = 1
