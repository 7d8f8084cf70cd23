package resilience

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDeadlineExceededErrorMessage(t *testing.T) {
	if got := (&DeadlineExceededError{Scope: iamUsers}).Error(); got != "deadline exceeded for aws/123456789012/*/iam/ListUsers" {
		t.Fatal(got)
	}
	e := &DeadlineExceededError{Scope: iamUsers, Wait: 2500 * time.Millisecond, Err: context.DeadlineExceeded}
	if e.Error() != "deadline exceeded for aws/123456789012/*/iam/ListUsers: a wait of 2.5s would overrun it" || !errors.Is(e, context.DeadlineExceeded) {
		t.Fatal(e.Error())
	}
}
