package ctxend

import (
	"context"
	"errors"
	"net/url"
	"testing"
)

// timeout is a transport's timeout, which matches
// context.DeadlineExceeded as net/http's does.
type timeout struct{}

func (timeout) Error() string        { return "timeout awaiting response headers" }
func (timeout) Timeout() bool        { return true }
func (timeout) Is(target error) bool { return target == context.DeadlineExceeded }

// Of finds a context's end in a context's own error and in an *Error, and
// in nothing else, however it matches a context's error with errors.Is.
func TestOfReadsOnlyAContextsOwnEnd(t *testing.T) {
	answer := &url.Error{Op: "Post", URL: "https://example.test/", Err: timeout{}}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"the deadline", context.DeadlineExceeded, context.DeadlineExceeded},
		{"a cancellation", context.Canceled, context.Canceled},
		{"the deadline with the last answer", &Error{Ctx: context.DeadlineExceeded, Last: answer}, context.DeadlineExceeded},
		{"a cancellation with the last answer", &Error{Ctx: context.Canceled, Last: answer}, context.Canceled},
		{"a transport's timeout", answer, nil},
		{"the deadline wrapped", &url.Error{Op: "Post", URL: "https://example.test/", Err: context.DeadlineExceeded}, nil},
		{"the deadline joined", errors.Join(context.DeadlineExceeded, answer), nil},
		{"nil", nil, nil},
	} {
		if got := Of(tc.err); got != tc.want {
			t.Errorf("%s: Of = %v, want %v", tc.name, got, tc.want)
		}
	}
	e := &Error{Ctx: context.Canceled, Last: answer}
	var ue *url.Error
	if !errors.Is(e, context.Canceled) || !errors.As(e, &ue) || e.Error() != "context canceled (last error: Post \"https://example.test/\": timeout awaiting response headers)" {
		t.Errorf("an *Error: Is canceled %v, As the answer %v, %q", errors.Is(e, context.Canceled), errors.As(e, &ue), e.Error())
	}
}
