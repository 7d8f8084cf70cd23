package cloudgaws

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/cloudg/cloudg/internal/ctxend"
)

// timeoutError is a transport's timeout, which matches
// context.DeadlineExceeded as net/http's does.
type timeoutError struct{}

func (timeoutError) Error() string        { return "timeout awaiting response headers" }
func (timeoutError) Timeout() bool        { return true }
func (timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// A retry that Guard.Pace refused before the context said its deadline
// had come ends as the context's end only when Pace read the deadline
// (the context's error with the last answer, a *ctxend.Error): a last answer Pace
// returns as it is (a token's wait would pass the deadline) is the
// provider's error, not retried, even when it matches
// context.DeadlineExceeded, as a transport's timeout does.
func TestAPacedRetryIsCanceledOnlyByTheDeadlinesEnd(t *testing.T) {
	timedOut := &url.Error{Op: "Post", URL: "https://ec2.us-east-1.amazonaws.com/", Err: timeoutError{}}
	var rc *aws.RequestCanceledError
	var nr *notRetryable
	if err := paceError(context.Background(), timedOut); errors.As(err, &rc) || !errors.As(err, &nr) || !errors.Is(err, timedOut) {
		t.Errorf("a last answer that timed out, returned as it is: %T %v; want it not retried, no canceled request", err, err)
	}
	if err := paceError(context.Background(), &ctxend.Error{Ctx: context.DeadlineExceeded, Last: timedOut}); !errors.As(err, &rc) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the deadline's error joined to the last answer: %T %v; want a canceled request", err, err)
	}
}
