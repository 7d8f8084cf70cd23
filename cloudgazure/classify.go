package cloudgazure

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/cloudg/cloudg/internal/errread"
)

// Importing this package teaches the core's classifier azcore's error
// shape: an *azcore.ResponseError carries its status, its error code
// (x-ms-error-code or the body's error.code) and its response headers.
// resilience.Classify, RetryAfter, DescribeError and every Guard then read
// it by the core's tables: SubscriptionRequestsThrottled is throttling,
// RetryableErrorDueToAnotherOperation transient, a 404 fatal, and
// Retry-After or x-ms-user-quota-resets-after the provider's hint. It
// also teaches it the errors of Azure data-plane SDKs that carry their
// answer by a RawResponse() *http.Response method rather than in
// *azcore.ResponseError (azcosmos's, azservicebus's Atom administration
// errors): their status and headers are read, so that Cosmos DB's 429
// gives its x-ms-retry-after-ms to resilience.RetryAfter, and a 429
// without a body is throttling. An Azure answer with Cosmos DB's status
// 449 Retry With, which the core's tables do not list, is transient,
// whatever its error code: a write that collided with concurrent writes
// to the same item, safe to retry; and so is Cosmos DB's 410 Gone with
// the sub-status of a partition that split or moved (1002, 1007, 1008),
// which azcosmos retries. An App Configuration store's 429 whose
// body names its Storage quota, the size of the store's data, which no
// wait replenishes, is fatal, as a quota on resources rather than a rate
// is; the per-retry policy reads it so too, and does not let azcore retry
// it.
func init() { errread.Register(readResponseError) }

// responseCarrier is an error that carries the HTTP answer it reports by
// a method: the errors of azcosmos and azservicebus's Atom administration
// client. Its ErrorCode() string, when it has one, the core reads itself.
type responseCarrier interface {
	RawResponse() *http.Response
}

// readResponseError reads an *azcore.ResponseError, an error that carries
// its answer by RawResponse (a responseCarrier: its status and headers),
// and the per-retry policy's view of an answer (a statusError), whose
// status and headers the core reads by method. A status the core's table lists (429 and 503
// throttling, 408, 500, 502 and 504 transient) decides the policy's view
// alone, whatever the answer's error code, but for App Configuration's 429
// for its Storage quota, which is fatal (storageQuota); for any other
// status the reader
// gives the answer's error code, and Cosmos DB's 449 and 410 for a
// partition that split or moved their verdict (statusVerdict), so that
// the policy classifies the answer as resilience.Classify does the
// *azcore.ResponseError the caller gets: those as transient, any other by
// its code, or, without one, by its message.
func readResponseError(err error) (errread.Details, bool) {
	switch e := err.(type) {
	case *azcore.ResponseError:
		d := errread.Details{Code: e.ErrorCode, Status: e.StatusCode}
		if e.RawResponse != nil {
			d.Header = e.RawResponse.Header
		}
		d.Kind = statusVerdict(e.StatusCode, d.Header)
		if e.RawResponse != nil && storageQuota(e.RawResponse) {
			d.Kind = errread.Fatal
		}
		return d, true
	case *statusError:
		if storageQuota(e.resp) {
			return errread.Details{Kind: errread.Fatal}, true
		}
		if byStatus(e.resp.StatusCode) {
			return errread.Details{}, false
		}
		d := errread.Details{Kind: statusVerdict(e.resp.StatusCode, e.resp.Header)}
		if re, ok := e.response().(*azcore.ResponseError); ok {
			d.Code = re.ErrorCode
		}
		return d, d.Code != "" || d.Kind != errread.None
	case responseCarrier:
		if resp := e.RawResponse(); resp != nil {
			return errread.Details{Status: resp.StatusCode, Header: resp.Header, Kind: statusVerdict(resp.StatusCode, resp.Header)}, true
		}
	}
	return errread.Details{}, false
}

// statusRetryWith is Cosmos DB's 449 Retry With, a status of Microsoft's
// that net/http does not name.
const statusRetryWith = 449

// statusVerdict returns the kind of an Azure answer's status, with its
// headers h (nil when unknown), when they decide it whatever the answer's
// error code: 449 Retry With, which Cosmos DB gives a write that collided
// with concurrent writes to the same item, is transient (Microsoft's
// guide to resilient Cosmos DB applications: "safe to retry"), though the
// core's tables do not list it; and so is Cosmos DB's 410 Gone for a
// partition that split or moved (partitionGone), which azcosmos retries.
// errread.None for any other answer, which the tables decide.
func statusVerdict(status int, h http.Header) errread.Kind {
	if status == statusRetryWith || partitionGone(status, h) {
		return errread.Transient
	}
	return errread.None
}

// partitionGone reports whether an answer of status with headers h is
// Cosmos DB's 410 Gone for a partition key range that is gone (sub-status
// 1002), splitting (1007) or migrating (1008): azcosmos refreshes its
// partition key ranges and retries such an answer
// (isPartitionKeyRangeGoneError), as the .NET and Java SDKs do. A 410
// with another sub-status, or none, is no such answer.
func partitionGone(status int, h http.Header) bool {
	if status != http.StatusGone {
		return false
	}
	v := h["X-Ms-Substatus"]
	if len(v) == 0 {
		return false
	}
	switch strings.TrimSpace(v[0]) {
	case "1002", "1007", "1008":
		return true
	}
	return false
}

// byStatus reports whether the per-retry policy reads an answer of status
// by its status alone, the error code aside: the statuses of the core's
// table, 429 and 503 (throttling) and 408, 500, 502 and 504 (transient).
func byStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable,
		http.StatusRequestTimeout, http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// appConfigTooMany is the type of App Configuration's 429 answers, an
// application/problem+json document whose policy names the store's quota
// that was spent ("Throttling", App Configuration's REST API reference).
const appConfigTooMany = "https://azconfig.io/errors/too-many-requests"

// storageQuota reports whether resp is App Configuration's 429 for its
// Storage quota, the total size of the store's data: a quota on
// resources, which no wait replenishes, not a rate (TotalRequests,
// WriteRequests, Bandwidth), so that the answer is fatal, as the core
// reads a LimitExceededException that speaks of no rate. The body is read
// only when azcore keeps it in memory, as runtime.NewResponseError leaves
// it, and as azcore's body download policy leaves it before the per-retry
// policy sees the answer (a body with a Bytes method); a body still to be read, or closed, is
// neither read nor replaced, and the answer stays throttling by its
// status.
func storageQuota(resp *http.Response) bool {
	if resp.StatusCode != http.StatusTooManyRequests {
		return false
	}
	kept, ok := resp.Body.(interface{ Bytes() []byte })
	if !ok {
		return false
	}
	b := kept.Bytes()
	if !bytes.Contains(b, []byte(appConfigTooMany)) {
		return false
	}
	var problem struct{ Type, Policy string }
	if json.Unmarshal(b, &problem) != nil {
		return false
	}
	return problem.Type == appConfigTooMany && strings.EqualFold(problem.Policy, "Storage")
}
