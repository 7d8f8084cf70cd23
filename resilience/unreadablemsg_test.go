package resilience

import (
	"fmt"
	"strings"
	"testing"
)

// quotaErr is an AWS-shaped answer whose code is LimitExceededException,
// which the classifier reads as a throttle only when the error's message
// speaks of a rate; its ErrorMessage reads a field that may be nil (as a
// smithy.GenericAPIError's does of its receiver), its Error does not.
type quotaErr struct{ detail *string }

func (e *quotaErr) Error() string        { return "LimitExceededException: quota" }
func (e *quotaErr) ErrorCode() string    { return "LimitExceededException" }
func (e *quotaErr) ErrorMessage() string { return *e.detail }

// The classifier reads the message of an error whose code is
// LimitExceededException through its ErrorMessage method: a method of the
// error, which may panic as its other methods may, and must not crash the
// process in the classifier's code. Such an error is unreadable (FATAL,
// not a provider's answer), and what the layers read whole above it say
// stands, as for any other method's panic.
func TestALimitExceededWhoseErrorMessagePanicsIsUnreadable(t *testing.T) {
	try := func(t *testing.T, what string, f func()) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s panicked: %v", what, r)
			}
		}()
		f()
	}
	t.Run("alone", func(t *testing.T) {
		err := fmt.Errorf("op: %w", &quotaErr{})
		try(t, "Classify", func() {
			if k := Classify(err); k != Fatal {
				t.Errorf("Classify = %v, want FATAL", k)
			}
		})
		try(t, "ClassifyStrict", func() {
			if k, ok := ClassifyStrict(err); k != Fatal || !ok {
				t.Errorf("ClassifyStrict = %v, %v; want FATAL, true", k, ok)
			}
		})
		try(t, "IsProviderAnswer", func() {
			if IsProviderAnswer(err) {
				t.Error("IsProviderAnswer = true, want false: the error is unreadable")
			}
		})
		try(t, "DescribeError", func() {
			if d := DescribeError(err); !strings.Contains(d, "unreadable error (a method of *resilience.quotaErr (ErrorMessage) panicked") {
				t.Errorf("DescribeError = %q, want it to say quotaErr's method panicked", d)
			}
		})
	})
	t.Run("under a throttle code", func(t *testing.T) {
		err := &derefErr{code: "Throttling", status: 400, inner: &quotaErr{}}
		try(t, "Classify", func() {
			if k := Classify(err); k != Throttled {
				t.Errorf("Classify = %v, want THROTTLED: the outer error's code was read whole", k)
			}
		})
	})
}
