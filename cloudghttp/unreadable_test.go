package cloudghttp

import (
	"fmt"
	"testing"

	"github.com/cloudg/cloudg/internal/unreadabletest"
)

// The package's *StatusError reads its receiver in its methods, as its
// error reader does: a nil one in a chain (an application's error that
// wraps one it did not set) must not crash the process in the classifier.
// It reads as an unreadable error.
func TestANilStatusErrorIsUnreadable(t *testing.T) {
	unreadabletest.Check(t, "nil *StatusError", (*StatusError)(nil))
	unreadabletest.Check(t, "wrapped nil *StatusError", fmt.Errorf("get: %w", (*StatusError)(nil)))
}
