package cloudggcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	asset "cloud.google.com/go/asset/apiv1"
	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	gax "github.com/googleapis/gax-go/v2"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/durationpb"
)

func apiErr(t *testing.T, err error) *apierror.APIError {
	t.Helper()
	ae, ok := apierror.FromError(err)
	if !ok {
		t.Fatalf("not an API error: %v", err)
	}
	return ae
}

// Once the package is imported, gRPC status errors and *apierror.APIError
// classify as google-api-core classifies them, with RetryInfo as the
// Retry-After.
func TestClassifyGRPC(t *testing.T) {
	for _, tc := range []struct {
		code   codes.Code
		kind   resilience.Kind
		answer bool
	}{
		{codes.ResourceExhausted, resilience.Throttled, true},
		{codes.Unavailable, resilience.Throttled, true}, // ServiceUnavailable, 503
		{codes.DeadlineExceeded, resilience.Transient, true},
		{codes.Internal, resilience.Transient, true},
		{codes.Unknown, resilience.Transient, true}, // 500
		{codes.DataLoss, resilience.Fatal, true},
		{codes.PermissionDenied, resilience.Fatal, true},
		{codes.NotFound, resilience.Fatal, true},
		{codes.InvalidArgument, resilience.Fatal, true},
		{codes.Unauthenticated, resilience.Fatal, true},
		{codes.Unimplemented, resilience.Fatal, true},
		{codes.FailedPrecondition, resilience.Fatal, true},
		{codes.Aborted, resilience.Fatal, true},
		{codes.Canceled, resilience.Fatal, false},
	} {
		st := status.New(tc.code, "message")
		for name, err := range map[string]error{
			"status":  st.Err(),
			"api":     apiErr(t, st.Err()),
			"wrapped": fmt.Errorf("listing: %w", apiErr(t, st.Err())),
		} {
			if k := resilience.Classify(err); k != tc.kind {
				t.Errorf("%v %s: %v, want %v", tc.code, name, k, tc.kind)
			}
			if a := resilience.IsProviderAnswer(err); a != tc.answer {
				t.Errorf("%v %s: answer %v", tc.code, name, a)
			}
		}
	}
}

func TestClassifyRetryInfo(t *testing.T) {
	err := throttled(7 * time.Second)
	for name, e := range map[string]error{"status": err, "api": apiErr(t, err)} {
		if d, ok := resilience.RetryAfter(e); !ok || d != 7*time.Second {
			t.Errorf("%s: RetryAfter %v %v", name, d, ok)
		}
		if !strings.HasPrefix(resilience.DescribeError(e), "throttled: ") {
			t.Errorf("%s: %q", name, resilience.DescribeError(e))
		}
	}
	if _, ok := resilience.RetryAfter(throttled(0)); ok {
		t.Error("a hint without RetryInfo")
	}
}

// grpc's statuses for the caller's own context are not provider answers.
func TestClassifyContextStatus(t *testing.T) {
	dl := status.FromContextError(context.DeadlineExceeded).Err()
	if k := resilience.Classify(dl); k != resilience.Transient || resilience.IsProviderAnswer(dl) {
		t.Errorf("deadline: %v, answer %v", k, resilience.IsProviderAnswer(dl))
	}
	cn := status.FromContextError(context.Canceled).Err()
	if resilience.IsProviderAnswer(cn) {
		t.Error("cancelled is an answer")
	}
}

// REST clients: *googleapi.Error under *apierror.APIError, with headers.
func TestClassifyHTTP(t *testing.T) {
	for _, tc := range []struct {
		code int
		kind resilience.Kind
	}{
		{http.StatusTooManyRequests, resilience.Throttled},
		{http.StatusServiceUnavailable, resilience.Throttled},
		{http.StatusInternalServerError, resilience.Transient},
		{http.StatusGatewayTimeout, resilience.Transient},
		{http.StatusForbidden, resilience.Fatal},
	} {
		ge := &googleapi.Error{Code: tc.code, Message: "m", Header: http.Header{"Retry-After": {"5"}}}
		err := apiErr(t, ge)
		if k := resilience.Classify(err); k != tc.kind {
			t.Errorf("%d: %v, want %v", tc.code, k, tc.kind)
		}
		if !resilience.IsProviderAnswer(err) {
			t.Errorf("%d: not an answer", tc.code)
		}
		if d, ok := resilience.RetryAfter(err); !ok || d != 5*time.Second {
			t.Errorf("%d: RetryAfter %v", tc.code, d)
		}
	}
}

// A REST answer carries no error code the classifier reads, only its HTTP
// status; one on no list (400, 403) decides nothing, so its message does:
// Google's classic 403 userRateLimitExceeded is throttling, as is a 400
// that reads "Throttling: Rate exceeded"; a 403 about a permission is
// fatal.
func TestClassifyHTTPWithoutListedStatusByMessage(t *testing.T) {
	rateLimit := &googleapi.Error{Code: http.StatusForbidden, Message: "User Rate Limit Exceeded",
		Errors: []googleapi.ErrorItem{{Reason: "userRateLimitExceeded", Message: "User Rate Limit Exceeded"}}}
	for _, tc := range []struct {
		ge   *googleapi.Error
		kind resilience.Kind
	}{
		{rateLimit, resilience.Throttled},
		{&googleapi.Error{Code: http.StatusBadRequest, Message: "Throttling: Rate exceeded"}, resilience.Throttled},
		{&googleapi.Error{Code: http.StatusForbidden, Message: "The caller does not have permission"}, resilience.Fatal},
		{&googleapi.Error{Code: http.StatusNotFound, Body: "Not Found"}, resilience.Fatal},
	} {
		for name, err := range map[string]error{"googleapi": tc.ge, "api": apiErr(t, tc.ge), "wrapped": fmt.Errorf("list: %w", apiErr(t, tc.ge))} {
			if k := resilience.Classify(err); k != tc.kind {
				t.Errorf("%s %q: %v, want %v", name, err, k, tc.kind)
			}
			if !resilience.IsProviderAnswer(err) {
				t.Errorf("%s %q: not an answer", name, err)
			}
		}
	}
	if got := resilience.DescribeError(rateLimit); got != "throttled: googleapi: Error 403: User Rate Limit Exceeded, userRateLimitExceeded" {
		t.Errorf("described %q", got)
	}
}

// The GCP retry retries ResourceExhausted, Unavailable, DeadlineExceeded
// and Internal, and nothing else.
func TestRetryableCodes(t *testing.T) {
	for c, want := range map[codes.Code]bool{
		codes.ResourceExhausted: true, codes.Unavailable: true, codes.DeadlineExceeded: true, codes.Internal: true,
		codes.PermissionDenied: false, codes.Unknown: false, codes.Aborted: false, codes.NotFound: false,
	} {
		if ok := retryable(apiErr(t, status.Error(c, "m"))); ok != want {
			t.Errorf("%v retryable %v", c, ok)
		}
	}
	if retryable(errors.New("local")) {
		t.Error("a local error is retryable")
	}
	if !Unavailable(apiErr(t, denied())) || !Unavailable(status.Error(codes.Unimplemented, "")) || Unavailable(throttled(0)) {
		t.Error("Unavailable")
	}
}

func TestCoverage(t *testing.T) {
	if c := NewCoverage("n", 5, nil); c.Status != StatusSuccess || c.Message != "" {
		t.Errorf("%+v", c)
	}
	rbe := &resilience.RetryBudgetExhaustedError{Scope: Scope("projects/p1", RPCListAssets), Err: apiErr(t, throttled(0))}
	if c := NewCoverage("n", 5, rbe); c.Status != StatusPartial || c.Message != "listing truncated: throttled: "+rbe.Error() {
		t.Errorf("%+v", c)
	}
	if c := NewCoverage("n", 0, rbe); c.Status != StatusFailed || c.Message != "throttled: "+rbe.Error() {
		t.Errorf("%+v", c)
	}
}

// failingToken is a client's per-RPC credentials whose token cannot be
// had (the metadata server or the token endpoint is down): grpc fails
// the call with Unauthenticated before anything is sent.
type failingToken struct{}

func (failingToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return nil, errors.New("oauth2: cannot fetch token: dial tcp 169.254.169.254:80: connect: connection refused")
}
func (failingToken) RequireTransportSecurity() bool { return false }

// A call whose credentials fail locally never reached the service: grpc's
// Unauthenticated for it ("transport: per-RPC creds failed due to error")
// is no provider answer, and, as a local fatal error, leaves the scope's
// breaker alone rather than prove the service reachable (which resets the
// breaker's count of failures and closes a half-open breaker).
func TestLocalCredentialsFailureIsNoAnswer(t *testing.T) {
	f := newFake(1)
	client := startTCP(t, f, option.WithGRPCDialOption(grpc.WithPerRPCCredentials(failingToken{})))
	gov := newGov(t, resilience.Config{})
	scope := Scope("projects/p1", "GetFeed")
	for range 2 { // two failures the breaker counts
		_ = resilience.Do(context.Background(), scope, func(context.Context) error { return status.Error(codes.Unavailable, "down") },
			resilience.WithGovernor(gov), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
	}
	if n := gov.Inspect(scope).Breaker.Failures; n != 2 {
		t.Fatalf("breaker failures %d, want 2", n)
	}
	_, err := Do(context.Background(), scope, func(ctx context.Context, opts ...gax.CallOption) (*assetpb.Feed, error) {
		return client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: "projects/p1/feeds/f"}, opts...)
	}, WithGovernor(gov))
	if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "per-RPC creds failed") {
		t.Fatalf("err %v, want grpc's Unauthenticated for the credentials", err)
	}
	if len(f.reqs("GetFeed")) != 0 {
		t.Fatal("the call reached the service")
	}
	if resilience.IsProviderAnswer(err) {
		t.Errorf("IsProviderAnswer(%v) = true, want false", err)
	}
	if n := gov.Inspect(scope).Breaker.Failures; n != 2 {
		t.Errorf("breaker failures %d after the local failure, want 2 still", n)
	}
}

// restRetryInfoBody is a Google front end's answer to a request past a
// rate quota, as Compute sends it: the delay in a google.rpc.RetryInfo
// among the error's details, no Retry-After header, and the legacy
// errors list beside the details.
const restRetryInfoBody = `{"error": {"code": 429, "message": "Quota exceeded for quota metric 'Read requests'",
"errors": [{"message": "Quota exceeded for quota metric 'Read requests'", "domain": "global", "reason": "rateLimitExceeded"}],
"status": "RESOURCE_EXHAUSTED",
"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "30s"},
{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED", "domain": "googleapis.com"}]}}`

// A REST client's *googleapi.Error whose JSON body carries a
// google.rpc.RetryInfo gives its retryDelay as the error's Retry-After, as
// a gRPC status's RetryInfo does: bare, as a REST client's call makes it
// from the answer (googleapi.CheckResponseWithBody, which compute's
// clients call), under the *apierror.APIError gax.Invoke returns (whose
// own details are empty when the body has the errors list, which its
// schema does not know), and wrapped. A Retry-After header comes first.
func TestClassifyRESTRetryInfo(t *testing.T) {
	answer := func(h http.Header) *googleapi.Error {
		t.Helper()
		resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: h}
		var ge *googleapi.Error
		if !errors.As(googleapi.CheckResponseWithBody(resp, []byte(restRetryInfoBody)), &ge) || len(ge.Details) != 2 {
			t.Fatalf("googleapi.CheckResponseWithBody did not make the error with its two details")
		}
		return ge
	}
	ge := answer(http.Header{"Content-Type": {"application/json"}})
	for name, err := range map[string]error{"googleapi": ge, "api": apiErr(t, ge), "wrapped": fmt.Errorf("get: %w", apiErr(t, ge))} {
		if d, ok := resilience.RetryAfter(err); !ok || d != 30*time.Second {
			t.Errorf("%s: RetryAfter %v, %v; want the body's RetryInfo, 30s", name, d, ok)
		}
		if k := resilience.Classify(err); k != resilience.Throttled {
			t.Errorf("%s: %v, want THROTTLED", name, k)
		}
	}
	if d, ok := resilience.RetryAfter(apiErr(t, answer(http.Header{"Retry-After": {"5"}}))); !ok || d != 5*time.Second {
		t.Errorf("with a Retry-After header: RetryAfter %v, %v; want the header's 5s", d, ok)
	}
	for name, details := range map[string][]any{
		"none":        nil,
		"unparsable":  {map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "soon"}},
		"other types": {map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "retryDelay": "30s"}, "30s"},
	} {
		if d, ok := resilience.RetryAfter(&googleapi.Error{Code: http.StatusTooManyRequests, Details: details}); ok {
			t.Errorf("details %s: RetryAfter %v, want no hint", name, d)
		}
	}
}

// tooManyPingsStatus is grpc-go's status for the calls of a connection that the
// server closed after a GOAWAY of ENHANCE_YOUR_CALM with the debug data
// too_many_pings (internal/transport's http2Client.Close).
const tooManyPingsStatus = `closing transport due to: connection error: desc = "error reading from server: EOF", ` +
	`received prior goaway: code: ENHANCE_YOUR_CALM, debug data: "too_many_pings"`

// A GOAWAY of ENHANCE_YOUR_CALM for too_many_pings is the server's answer
// to a client that pings more often than its keepalive policy allows: the
// client's settings, not its rate. grpc-go fails the connection's calls
// with Unavailable for it, which is a lost connection, as cloudghttp
// reads the GOAWAY: transient, not a throttle, and no answer of the
// service. Every other Unavailable is the service's, throttling as
// the spec's ServiceUnavailable (503) is, a GOAWAY of ENHANCE_YOUR_CALM
// without too_many_pings (a server refusing the client's rate) among them.
func TestClassifyTooManyPingsIsALostConnection(t *testing.T) {
	st := status.New(codes.Unavailable, tooManyPingsStatus)
	for name, err := range map[string]error{"status": st.Err(), "api": apiErr(t, st.Err()), "wrapped": fmt.Errorf("get: %w", apiErr(t, st.Err()))} {
		if k := resilience.Classify(err); k != resilience.Transient {
			t.Errorf("%s: %v, want TRANSIENT", name, k)
		}
		if resilience.IsProviderAnswer(err) {
			t.Errorf("%s: a provider answer, want a lost connection", name)
		}
	}
	for _, msg := range []string{
		"The service is currently unavailable.",
		`closing transport due to: connection error: desc = "error reading from server: EOF", received prior goaway: code: ENHANCE_YOUR_CALM`,
		`closing transport due to: connection error: desc = "error reading from server: EOF", received prior goaway: code: ENHANCE_YOUR_CALM, debug data: "rate"`,
		`closing transport due to: connection error: desc = "error reading from server: EOF", received prior goaway: code: NO_ERROR, debug data: "too_many_pings"`,
		"upstream: too_many_pings",
	} {
		err := status.Error(codes.Unavailable, msg)
		if k := resilience.Classify(err); k != resilience.Throttled || !resilience.IsProviderAnswer(err) {
			t.Errorf("%q: %v, answer %v; want THROTTLED, an answer", msg, k, resilience.IsProviderAnswer(err))
		}
	}
}

// The same with grpc-go itself: a server whose keepalive policy allows a
// ping an hour, a client that pings every 10 s while its call is held
// (virtual time): the server sends the GOAWAY on the third strike and
// closes the connection, and the call fails with grpc-go's Unavailable,
// which classifies as a lost connection.
func TestTooManyPingsFailsTheCallAsALostConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(1)
		f.fail("GetFeed", "", errHold)
		lis := bufconn.Listen(1 << 20)
		gs := grpc.NewServer(grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Hour}))
		assetpb.RegisterAssetServiceServer(gs, f)
		go gs.Serve(lis)
		client, err := asset.NewClient(context.Background(),
			option.WithEndpoint("passthrough:///bufconn"),
			option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
				return lis.DialContext(ctx)
			})),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
			option.WithGRPCDialOption(grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: time.Minute})))
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			client.Close()
			gs.Stop()
			lis.Close()
		}()
		_, err = client.GetFeed(context.Background(), &assetpb.GetFeedRequest{Name: "projects/p1/feeds/f"},
			gax.WithRetry(func() gax.Retryer { return nil }))
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), `debug data: "too_many_pings"`) {
			t.Fatalf("err %v, want grpc's Unavailable for the GOAWAY of too_many_pings", err)
		}
		if k := resilience.Classify(err); k != resilience.Transient || resilience.IsProviderAnswer(err) {
			t.Errorf("Classify(%v) = %v, answer %v; want TRANSIENT, no answer", err, k, resilience.IsProviderAnswer(err))
		}
	})
}

// A RetryInfo's retryDelay too long for a time.Duration (protobuf's
// Duration goes to 315,576,000,000 s, ten thousand years) is still the
// delay the server asked for, saturated as a gRPC status's RetryInfo is
// (durationpb's AsDuration) and as a Retry-After header's is, for the
// governor to cap at MaxPause: never no hint, which would have the retry
// sent after a backoff of a second. So in the REST body the Transport
// reads and in a REST client's *googleapi.Error alike.
func TestRESTRetryDelayTooLongForADurationSaturates(t *testing.T) {
	const longest = "315576000000s"
	body := `{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"` + longest + `"}]}}`
	base := roundTripper(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusTooManyRequests, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})
	req, _ := http.NewRequest("GET", "https://compute.googleapis.com/compute/v1/projects/p1", nil)
	resp, err := rateReasons{base}.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if hb, ok := resp.Body.(hintedBody); !ok || hb.BodyRetryAfter() != math.MaxInt64 {
		t.Errorf("REST transport: body %T, want a hint of the longest Duration for a retryDelay of %s", resp.Body, longest)
	}
	ge := &googleapi.Error{Code: http.StatusTooManyRequests, Details: []any{map[string]any{"@type": retryInfoType, "retryDelay": longest}}}
	grpcErr := status.New(codes.ResourceExhausted, "quota").Err()
	if st, err := status.New(codes.ResourceExhausted, "quota").WithDetails(&errdetails.RetryInfo{RetryDelay: &durationpb.Duration{Seconds: 315576000000}}); err == nil {
		grpcErr = st.Err()
	}
	for name, err := range map[string]error{"googleapi": ge, "gRPC": grpcErr} {
		if d, ok := resilience.RetryAfter(err); !ok || d != math.MaxInt64 {
			t.Errorf("%s: RetryAfter %v, %v; want the longest Duration for a retryDelay of %s", name, d, ok, longest)
		}
	}
}
