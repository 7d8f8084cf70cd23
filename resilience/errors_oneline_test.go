package resilience

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// An error that names a scope names it on one line: a scope whose part
// holds a character that is not printable (a newline a caller's account
// or service name brought) is written quoted, as Stats.Messages write it,
// so that the error forges no line of a log that carries it.
func TestAnErrorNamesAScopeOnOneLine(t *testing.T) {
	sc := Scope{Provider: "aws\u202e", Account: "1", Region: "us-east-1", Service: "ec2\nINFO forged"}
	for _, err := range []error{
		&CircuitOpenError{Scope: sc, Wait: time.Second},
		&RetryBudgetExhaustedError{Scope: sc},
		&DeadlineExceededError{Scope: sc},
		&WouldWaitError{Scope: sc, Err: ErrNoToken},
		&WouldWaitError{Scope: sc, Err: ErrNoSlot},
		&WouldWaitError{Scope: sc, Err: ErrCircuitOpen},
		&CallEndedError{Scope: sc},
	} {
		msg := err.Error()
		if strings.ContainsAny(msg, "\n\u202e") || !strings.Contains(msg, strconv.Quote(sc.String())) {
			t.Errorf("%T: %q; want the scope quoted, %s, on one line", err, msg, strconv.Quote(sc.String()))
		}
	}
}
