package test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// cosmosShapedError has the method set of the error azcosmos returns for
// an answer it does not accept (cosmosError, in
// sdk/data/azcosmos/cosmos_error.go, unexported): the error code read
// from the body's Code, the status by StatusCode and the response by
// RawResponse, both methods, where *azcore.ResponseError has fields;
// "response contained no body" when the answer had none, as a
// transactional batch's operation's 429 has. azservicebus's Atom
// administration errors also carry their response by RawResponse().
type cosmosShapedError struct {
	code string
	resp *http.Response
}

func (e *cosmosShapedError) Error() string {
	if e.code == "" {
		return "response contained no body"
	}
	return fmt.Sprintf(`{"code":%q,"message":"Request rate is large"}`, e.code)
}
func (e *cosmosShapedError) ErrorCode() string           { return e.code }
func (e *cosmosShapedError) StatusCode() int             { return e.resp.StatusCode }
func (e *cosmosShapedError) RawResponse() *http.Response { return e.resp }

// An Azure data-plane SDK's error that carries its answer by a
// RawResponse() *http.Response method (azcosmos's, azservicebus's Atom
// errors) is read as *azcore.ResponseError is: its status and its headers,
// so that Cosmos DB's 429 with x-ms-retry-after-ms gives its hint to
// resilience.RetryAfter (and to resilience.Do, which pauses the scope for
// it), and a 429 without a body is throttling, the provider's answer.
func TestAnErrorCarryingItsResponseIsRead(t *testing.T) {
	throttled := func(code string) error {
		h := http.Header{}
		h.Set("x-ms-retry-after-ms", "30000")
		h.Set("x-ms-substatus", "3200")
		return fmt.Errorf("read item: %w", &cosmosShapedError{code: code, resp: &http.Response{StatusCode: http.StatusTooManyRequests, Header: h}})
	}
	for _, code := range []string{"TooManyRequests", ""} {
		err := throttled(code)
		if d, ok := resilience.RetryAfter(err); !ok || d != 30*time.Second {
			t.Errorf("code %q: RetryAfter = %v %v, want 30 s from x-ms-retry-after-ms", code, d, ok)
		}
		if k := resilience.Classify(err); k != resilience.Throttled {
			t.Errorf("code %q: a 429 classifies %v, want THROTTLED", code, k)
		}
		if !resilience.IsProviderAnswer(err) {
			t.Errorf("code %q: a 429 is not a provider answer", code)
		}
	}

	// A Service Bus namespace's 503 through the Atom administration client:
	// no code, the status decides.
	busy := &cosmosShapedError{resp: &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {"7"}}}}
	if k := resilience.Classify(busy); k != resilience.Throttled {
		t.Errorf("a 503 classifies %v, want THROTTLED", k)
	}
	if d, ok := resilience.RetryAfter(busy); !ok || d != 7*time.Second {
		t.Errorf("a 503's RetryAfter = %v %v, want 7 s", d, ok)
	}

	// The code still wins over the status, and a 404 is fatal.
	notFound := &cosmosShapedError{code: "NotFound", resp: &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{}}}
	if k := resilience.Classify(notFound); k != resilience.Fatal {
		t.Errorf("a 404 NotFound classifies %v, want FATAL", k)
	}
	// No response: nothing read, nothing invented.
	if k, ok := resilience.ClassifyStrict(&cosmosShapedError{code: ""}); ok {
		t.Errorf("an error without a response classifies %v, ok; want nothing said", k)
	}
	if _, ok := resilience.RetryAfter(errors.Join(&cosmosShapedError{})); ok {
		t.Error("an error without a response gives a hint")
	}
}
