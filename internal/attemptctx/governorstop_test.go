package attemptctx

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// nilCause is an error whose Unwrap reads its receiver, as the SDKs'
// errors do: a nil one in a chain panics as the chain is unwrapped.
type nilCause struct{ err error }

func (e *nilCause) Error() string { return "nil cause" }
func (e *nilCause) Unwrap() error { return e.err }

// asPanics is an error whose As method reads a pointer left nil:
// errors.As panics on it, while the core classifier, which never calls
// As, reads the errors beside it.
type asPanics struct{ into *struct{ ok bool } }

func (asPanics) Error() string { return "as panics" }
func (e asPanics) As(any) bool { return e.into.ok }

// GovernorStop reads an attempt's error for the governor's own refusal,
// which it returns, without panicking, and past a method of its chain
// that panics: a refusal joined beside an error whose As or Unwrap panics (errors.Join,
// before or after it) is a stop; a chain whose only refusal is a nil
// pointer is none, as the core classifier reads one (its RetryAfter
// panics: an unreadable error, not the governor's); a chain with no
// refusal is none, and its panic is not the caller's.
func TestGovernorStopReadsPastAPanicAndNoNilRefusal(t *testing.T) {
	scope := resilience.Scope{Provider: "gcp", Account: "projects/p1", Service: "oauth2"}
	refusals := map[string]error{
		"open breaker":   &resilience.CircuitOpenError{Scope: scope, Wait: time.Second},
		"empty budget":   &resilience.RetryBudgetExhaustedError{Scope: scope},
		"wait too long":  &resilience.WouldWaitError{Scope: scope, Wait: time.Second},
		"deadline's end": &resilience.DeadlineExceededError{Scope: scope, Wait: time.Second},
	}
	broken := fmt.Errorf("broken: %w", (*nilCause)(nil))
	for name, refusal := range refusals {
		wrapped := fmt.Errorf("token: %w", refusal)
		for shape, err := range map[string]error{
			"alone":                        wrapped,
			"after an As that panics":      errors.Join(asPanics{}, wrapped),
			"after an Unwrap that panics":  errors.Join(broken, wrapped),
			"before an Unwrap that panics": errors.Join(wrapped, broken),
		} {
			t.Run(name+", "+shape, func(t *testing.T) {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("GovernorStop panicked: %v", p)
					}
				}()
				if got := GovernorStop(err); got != refusal {
					t.Errorf("GovernorStop(%s) = %v, want the governor's refusal %v", shape, got, refusal)
				}
			})
		}
	}
	for name, err := range map[string]error{
		"a nil *CircuitOpenError":           fmt.Errorf("x: %w", (*resilience.CircuitOpenError)(nil)),
		"a nil *RetryBudgetExhaustedError":  fmt.Errorf("x: %w", (*resilience.RetryBudgetExhaustedError)(nil)),
		"a nil *WouldWaitError":             fmt.Errorf("x: %w", (*resilience.WouldWaitError)(nil)),
		"a nil *DeadlineExceededError":      fmt.Errorf("x: %w", (*resilience.DeadlineExceededError)(nil)),
		"an Unwrap that panics, no refusal": errors.Join(broken, errors.New("other")),
		"an As that panics, no refusal":     asPanics{},
		"the scope's own answer":            errors.New("connection refused"),
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("GovernorStop panicked: %v", p)
				}
			}()
			if got := GovernorStop(err); got != nil {
				t.Errorf("GovernorStop(%s) = %#v, want nil: no stop", name, got)
			}
		})
	}
}
