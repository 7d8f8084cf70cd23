//go:build go1.25

package cloudghttp_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/resilience"
)

// nilReceiverError is a base transport's error type whose methods read
// their receiver: a nil one panics in Error and Unwrap.
type nilReceiverError struct{ err error }

func (e *nilReceiverError) Error() string { return "base: " + e.err.Error() }
func (e *nilReceiverError) Unwrap() error { return e.err }

// typedNilBase fails every request with a nil *nilReceiverError: a typed
// nil, a non-nil error whose methods panic.
type typedNilBase struct{}

func (typedNilBase) RoundTrip(*http.Request) (*http.Response, error) {
	var e *nilReceiverError
	return nil, e
}

// A base transport (the caller's code) that fails a request with an error
// whose methods panic must not crash the process in the Transport: net/http
// gives the caller such an error without reading it, and so does the
// Transport, the call lost as errored (a local error the governor could
// not read), its ledger saying so.
func TestABaseErrorWhoseMethodsPanicIsNoCrash(t *testing.T) {
	gov := newGov(t, resilience.Config{})
	ctx, ledger := resilience.WithLedger(context.Background(), "items")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.example.com/items", nil)
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("the request panicked: %v", r)
			}
		}()
		var resp *http.Response
		resp, err = client(typedNilBase{}, gov, withAttempts(3)).Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
	}()
	if err == nil {
		t.Fatal("the request succeeded")
	}
	if ledger.Count(resilience.LossErrored) != 1 || !strings.Contains(ledger.Describe(), "unreadable error") {
		t.Fatalf("ledger %q, want the call lost as errored, its error unreadable", ledger.Describe())
	}
}
