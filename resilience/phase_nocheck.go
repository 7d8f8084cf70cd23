//go:build !cloudgdebug

package resilience

// checkPhases is off outside the cloudgdebug build: a release build pays
// nothing for the transition table.
const checkPhases = false
