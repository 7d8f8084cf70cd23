//go:build !cloudgdebug

package liveop

// checkPhases is off outside the cloudgdebug build: a release build pays
// nothing for the transition table.
const checkPhases = false
