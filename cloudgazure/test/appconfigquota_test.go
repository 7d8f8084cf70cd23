package test

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/cloudg/cloudg/resilience"
)

// appConfig429 is an App Configuration store's 429 as azcore's generated
// clients return it: runtime.NewResponseError reads the body (an
// application/problem+json document that names no code) and keeps it.
func appConfig429(policy string) error {
	return runtime.NewResponseError(appConfig429Response(nil, policy, "10"))
}

// appConfig429Response is an App Configuration store's 429 answering req
// for its quota policy (TotalRequests, WriteRequests, Bandwidth or
// Storage), as the store sends it: an application/problem+json body that
// names the policy and no code, and a retry-after-ms header of
// retryAfterMs.
func appConfig429Response(req *http.Request, policy, retryAfterMs string) *http.Response {
	body := `{"type":"https://azconfig.io/errors/too-many-requests","title":"Resource utilization has surpassed the assigned quota","policy":"` + policy + `","status":429}`
	h := http.Header{}
	h.Set("Content-Type", "application/problem+json; charset=utf-8")
	h.Set("retry-after-ms", retryAfterMs)
	return &http.Response{StatusCode: http.StatusTooManyRequests, Status: "429 Too Many Requests", Header: h, Request: req, Body: io.NopCloser(strings.NewReader(body))}
}

// storageQuotaSpent is a store whose Storage quota is spent: it answers
// every request with its Storage quota's 429 (retry-after-ms 5000) and
// counts the requests in sent.
func storageQuotaSpent(sent *atomic.Int32) transportFunc {
	return func(req *http.Request) (*http.Response, error) {
		sent.Add(1)
		return appConfig429Response(req, "Storage", "5000"), nil
	}
}

// App Configuration answers 429 for every quota of a store, and names the
// quota in its body's policy ("Throttling", App Configuration's REST API
// reference): TotalRequests, WriteRequests and Bandwidth are rates, which
// replenish, but Storage is the total size of the store's data, which no
// wait replenishes. As the core reads AWS's LimitExceededException, a quota
// on resources rather than a rate is Fatal, a provider's answer: the
// caller's error is not retried and not recorded as throttling. The rates
// stay throttling.
func TestAppConfigStorageQuotaIsFatal(t *testing.T) {
	storage := appConfig429("Storage")
	if k := resilience.Classify(storage); k != resilience.Fatal {
		t.Errorf("App Configuration's 429 for its Storage quota classifies %v, want FATAL", k)
	}
	if !resilience.IsProviderAnswer(storage) {
		t.Error("App Configuration's 429 for its Storage quota is not a provider answer")
	}
	if d := resilience.DescribeError(storage); strings.HasPrefix(d, "throttled: ") {
		t.Errorf("App Configuration's 429 for its Storage quota is described %q, as throttling", d[:40])
	}
	for _, p := range []string{"TotalRequests", "WriteRequests", "Bandwidth", "Total Requests"} {
		if k := resilience.Classify(appConfig429(p)); k != resilience.Throttled {
			t.Errorf("App Configuration's 429 for its %s quota classifies %v, want THROTTLED", p, k)
		}
	}
}

// readCounter is a response body that counts its reads and fails them, as
// a body already closed would.
type readCounter struct{ reads int }

func (r *readCounter) Read([]byte) (int, error) { r.reads++; return 0, http.ErrBodyReadAfterClose }
func (r *readCounter) Close() error             { return nil }

// Classifying an error reads its answer's body only when azcore already
// keeps it in memory: a body still to be read, or closed, is neither read
// nor replaced (a read has no side effects), and the 429 is throttling by
// its status.
func TestClassifyingDoesNotReadTheBody(t *testing.T) {
	body := &readCounter{}
	resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{}, Body: body}
	err := &azcore.ResponseError{StatusCode: http.StatusTooManyRequests, RawResponse: resp}
	if k := resilience.Classify(err); k != resilience.Throttled {
		t.Errorf("a 429 whose body is not kept classifies %v, want THROTTLED", k)
	}
	if body.reads != 0 || resp.Body != body {
		t.Errorf("classifying read the body %d times (replaced: %v)", body.reads, resp.Body != body)
	}
}
