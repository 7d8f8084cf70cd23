//go:build cloudgdebug

package liveop

// checkPhases makes Guard.to panic on a transition its table does not
// allow. The project's tests build with the cloudgdebug tag.
const checkPhases = true
