package cloudgaws

import (
	"errors"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/cloudg/cloudg/resilience"
)

// ThrottlingError is what a governed client returns when the governor, not
// the service, stopped a call: the scope's circuit breaker is open (nothing
// was sent), or the provider's retry budget ran out inside the SDK's retry
// loop. It is a smithy.APIError with the code Throttling, so code that
// inspects API error codes treats it as throttling, and it wraps the core's
// error, so errors.As finds *resilience.CircuitOpenError or
// *resilience.RetryBudgetExhaustedError (and, under the latter, the
// provider error that would have been retried). The SDK never retries it.
type ThrottlingError struct {
	// Err is a *resilience.CircuitOpenError or a
	// *resilience.RetryBudgetExhaustedError.
	Err error
}

var _ smithy.APIError = (*ThrottlingError)(nil)

// Error returns the core error's message.
func (e *ThrottlingError) Error() string {
	if e.Err == nil {
		return "throttled by the governor"
	}
	return e.Err.Error()
}

// ErrorCode returns "Throttling".
func (e *ThrottlingError) ErrorCode() string { return "Throttling" }

// ErrorMessage returns the core error's message.
func (e *ThrottlingError) ErrorMessage() string { return e.Error() }

// ErrorFault returns smithy.FaultClient: the caller is asked to slow down,
// as the services' own Throttling errors do.
func (e *ThrottlingError) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

// RetryableError returns false: the SDK's retryers must not retry a call
// the governor stopped.
func (e *ThrottlingError) RetryableError() bool { return false }

// RetryAfter returns the core error's hint: the time until the breaker
// lets a probe through, or the provider's Retry-After under an empty
// budget.
func (e *ThrottlingError) RetryAfter() time.Duration {
	if ra, ok := e.Err.(interface{ RetryAfter() time.Duration }); ok {
		return ra.RetryAfter()
	}
	return 0
}

// Unwrap returns the core error.
func (e *ThrottlingError) Unwrap() error { return e.Err }

// WrapsGovernorError marks the error as a resilience.GovernorErrorWrapper:
// the core classifies it as the error it wraps and never takes it for the
// provider's answer.
func (e *ThrottlingError) WrapsGovernorError() {}

var _ resilience.GovernorErrorWrapper = (*ThrottlingError)(nil)

// notRetryable marks an attempt's error as final for the SDK's retry loop,
// keeping it in the chain for errors.As and the classifier.
type notRetryable struct{ err error }

func (e *notRetryable) Error() string        { return e.err.Error() }
func (e *notRetryable) Unwrap() error        { return e.err }
func (e *notRetryable) RetryableError() bool { return false }

// httpResponder is what *smithyhttp.ResponseError and *awshttp.ResponseError
// (which embeds it) have in common: the HTTP response of the attempt.
type httpResponder interface {
	HTTPResponse() *smithyhttp.Response
}

// readResponseError teaches the core classifier the response headers of the
// SDK's HTTP response errors, so that resilience.RetryAfter and
// resilience.Classify see Retry-After and x-amz-retry-after on any error a
// client returns. The status code it reads by method already
// (HTTPStatusCode) and the error code too (smithy.APIError's ErrorCode).
func readResponseError(err error) (resilience.ErrorDetails, bool) {
	hr, ok := err.(httpResponder)
	if !ok {
		return resilience.ErrorDetails{}, false
	}
	resp := hr.HTTPResponse()
	if resp == nil || resp.Response == nil {
		return resilience.ErrorDetails{}, false
	}
	return resilience.ErrorDetails{Status: resp.StatusCode, Header: resp.Header}, true
}

func init() {
	resilience.RegisterErrorReader(readResponseError)
}

// isOurs reports whether err is (or wraps) an error the governor made to
// stop the call.
func isOurs(err error) bool {
	var te *ThrottlingError
	return errors.As(err, &te)
}

// governorError reports whether err, or an error it wraps, is the
// governor's own: a call it stopped, not a provider's answer.
func governorError(err error) bool {
	var coe *resilience.CircuitOpenError
	var rbe *resilience.RetryBudgetExhaustedError
	var dee *resilience.DeadlineExceededError
	return errors.As(err, &coe) || errors.As(err, &rbe) || errors.As(err, &dee)
}
