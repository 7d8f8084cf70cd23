// Package unreadabletest checks, for the tests of the SDK integrations,
// that the core's readers of an error do not panic on an error whose
// methods panic (an SDK's typed nil pointer, a response error without its
// response) and read it as an unreadable error, as resilience.Classify
// says: FATAL, no provider's answer, no hint, and a description that says
// so.
package unreadabletest

import (
	"strings"
	"testing"

	"github.com/cloudg/cloudg/resilience"
)

// Check reports on t, naming the error name, each of Classify,
// ClassifyStrict, IsProviderAnswer, RetryAfter and DescribeError that
// panics on err or does not read it as an unreadable error.
func Check(t testing.TB, name string, err error) {
	t.Helper()
	try := func(what string, f func()) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s: %s panicked: %v", name, what, r)
			}
		}()
		f()
	}
	try("Classify", func() {
		if k := resilience.Classify(err); k != resilience.Fatal {
			t.Errorf("%s: Classify = %v, want FATAL", name, k)
		}
	})
	try("ClassifyStrict", func() {
		if k, _ := resilience.ClassifyStrict(err); k != resilience.Fatal {
			t.Errorf("%s: ClassifyStrict = %v, want FATAL", name, k)
		}
	})
	try("IsProviderAnswer", func() {
		if resilience.IsProviderAnswer(err) {
			t.Errorf("%s: IsProviderAnswer = true, want false", name)
		}
	})
	try("RetryAfter", func() {
		if d, ok := resilience.RetryAfter(err); ok {
			t.Errorf("%s: RetryAfter = %v, want no hint", name, d)
		}
	})
	try("DescribeError", func() {
		if d := resilience.DescribeError(err); !strings.HasPrefix(d, "unreadable error (a method of ") {
			t.Errorf("%s: DescribeError = %q, want it to say the error is unreadable", name, d)
		}
	})
}
