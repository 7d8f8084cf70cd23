package test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// The error reader the package registers lets the core read Retry-After
// and x-amz-retry-after from any error an SDK client returns.
func TestRetryAfterFromSDKErrors(t *testing.T) {
	for _, tc := range []struct {
		reply reply
		want  time.Duration
	}{
		{tooManyRequests("7"), 7 * time.Second},
		{amzRetryAfterThrott("1500"), 1500 * time.Millisecond},
		{jsonThrottle, -1},
	} {
		synctest.Test(t, func(t *testing.T) {
			f := newFake(t)
			f.always("GetSecretValue", tc.reply)
			cfg, _ := governed(t, f, resilience.Config{}, cloudgaws.WithMaxRetries(0))
			err := getSecret(context.Background(), secretsmanager.NewFromConfig(cfg))
			if resilience.Classify(err) != resilience.Throttled {
				t.Fatalf("%v classified %v", err, resilience.Classify(err))
			}
			d, ok := resilience.RetryAfter(err)
			if tc.want < 0 {
				if ok {
					t.Fatalf("hint %v from a response without one", d)
				}
				return
			}
			if !ok || d != tc.want {
				t.Fatalf("RetryAfter = %v, %v; want %v", d, ok, tc.want)
			}
		})
	}
}

// The errors the governor returns are smithy API errors coded Throttling
// that the SDK's retryers never retry, and wrap the core's errors.
func TestThrottlingErrorShape(t *testing.T) {
	core := &resilience.CircuitOpenError{Scope: resilience.Scope{Provider: "aws", Account: testAccount, Service: "ec2"}, Wait: 42 * time.Second}
	var err error = &cloudgaws.ThrottlingError{Err: core}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "Throttling" || apiErr.ErrorMessage() != core.Error() || apiErr.ErrorFault() != smithy.FaultClient {
		t.Fatalf("%v is not a Throttling API error", err)
	}
	var coe *resilience.CircuitOpenError
	if !errors.As(err, &coe) || coe != core {
		t.Fatal("the core error is not in the chain")
	}
	if r, ok := err.(interface{ RetryableError() bool }); !ok || r.RetryableError() {
		t.Fatal("retryable")
	}
	if d, ok := resilience.RetryAfter(err); !ok || d != 42*time.Second {
		t.Fatalf("RetryAfter = %v, %v", d, ok)
	}
	if resilience.Classify(err) != resilience.Throttled || resilience.DescribeError(err) != "throttled: "+core.Error() {
		t.Fatalf("classified %v, described %q", resilience.Classify(err), resilience.DescribeError(err))
	}
	if resilience.IsProviderAnswer(err) {
		t.Fatal("the governor's own error is taken for the provider's answer")
	}
	be := &cloudgaws.ThrottlingError{Err: &resilience.RetryBudgetExhaustedError{Err: errors.New("x")}}
	if be.RetryAfter() != 0 {
		t.Fatal("budget error without a provider hint has a RetryAfter")
	}
}

// The error the AWS SDK returns when the transport closed the connection
// under an answer's body (it does when the SDK closes the request's body
// while the transport still reads it) is a transport failure: Transient,
// so that a governed call retries it, as the SDK's own retryer does.
func TestConnectionClosedUnderTheBodyIsTransient(t *testing.T) {
	err := &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 200, Header: http.Header{}}},
		Err: &smithy.DeserializationError{Err: fmt.Errorf("failed to decode response body, %w",
			&net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed})},
	}}
	wrapped := &smithy.OperationError{ServiceID: "EC2", OperationName: "DescribeInstances", Err: err}
	if k := resilience.Classify(wrapped); k != resilience.Transient {
		t.Fatalf("%v classified %v, want TRANSIENT", wrapped, k)
	}
}

// The zero ThrottlingError is usable, as its godoc says: a message, the
// Throttling code, no wait, nothing wrapped.
func TestThrottlingErrorZeroValue(t *testing.T) {
	var e cloudgaws.ThrottlingError
	if e.Error() != "throttled by the governor" || e.ErrorCode() != "Throttling" || e.RetryAfter() != 0 || e.Unwrap() != nil {
		t.Fatalf("zero ThrottlingError: %q, %q, %v, %v", e.Error(), e.ErrorCode(), e.RetryAfter(), e.Unwrap())
	}
}

// appThrottle is an application's error that embeds the governor's: nil
// when the application made it without one.
type appThrottle struct {
	*cloudgaws.ThrottlingError
	task string
}

// A nil *ThrottlingError, alone or embedded in an application's error,
// reads as the zero one: the classifier, which reads every error of the
// process, unwraps it and asks its wait without panicking, and it
// classifies as the zero one does.
func TestANilThrottlingErrorReadsAsTheZeroOne(t *testing.T) {
	zero := resilience.Classify(&cloudgaws.ThrottlingError{})
	for _, err := range []error{(*cloudgaws.ThrottlingError)(nil), appThrottle{task: "scan"}} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%T: panicked: %v", err, p)
				}
			}()
			if k := resilience.Classify(err); k != zero {
				t.Errorf("Classify(%T) = %v, want %v, the zero ThrottlingError's", err, k, zero)
			}
			if d, ok := resilience.RetryAfter(err); d != 0 {
				t.Errorf("RetryAfter(%T) = %v, %v; want no wait", err, d, ok)
			}
			if err.Error() != "throttled by the governor" || errors.Unwrap(err) != nil {
				t.Errorf("%T: not the zero ThrottlingError's message and chain", err)
			}
		}()
	}
}

// silentBody is the body of an answer whose connection went silent after
// its headers: a read fails as under the SDK's read timeout
// (awshttp.BuildableClient.WithReadTimeout), which the SDK retries.
type silentBody struct{}

func (silentBody) Read([]byte) (int, error) {
	return 0, &awshttp.ResponseTimeoutError{TimeoutDur: time.Second}
}
func (silentBody) Close() error { return nil }

// silentClient answers every request with headers and a body that times
// out.
type silentClient struct {
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
}

func (c silentClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.next.Do(req)
	if err == nil {
		resp.Body.Close()
		resp.Body = silentBody{}
	}
	return resp, err
}

// An answer whose body timed out (the SDK's *awshttp.ResponseTimeoutError,
// under a 200 whose body never came) is a timeout, Transient, as the SDK,
// which retries it, takes it: each attempt counts as a transient error,
// and the call that still failed after its retries counts toward the
// breaker. It is not a provider's fatal answer, which would prove the
// service reachable and reset the breaker's failures.
func TestAReadTimeoutIsTransient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, g := governed(t, f, resilience.Config{}, cloudgaws.WithMaxRetries(2))
		cfg.HTTPClient = silentClient{next: cfg.HTTPClient}
		ctx, stats := resilience.WithStats(context.Background())
		err := describeVpcs(ctx, ec2.NewFromConfig(cfg))
		var rte *awshttp.ResponseTimeoutError
		if !errors.As(err, &rte) || f.count("DescribeVpcs") != 3 {
			t.Fatalf("err = %v, sent %d; want the read timeout after 3 attempts", err, f.count("DescribeVpcs"))
		}
		if k := resilience.Classify(err); k != resilience.Transient {
			t.Fatalf("%v classified %v, want TRANSIENT", err, k)
		}
		if st := scopeStats(g, stats, ec2Key); st.TransientErrors != 3 || st.Retries != 2 || st.Failed != 1 {
			t.Fatalf("stats = %+v, want 3 transient errors, 2 retries, 1 failed call", st)
		}
		if b := g.Summary(nil).Breakers[mustScope(ec2Key+"/DescribeVpcs")]; b.Failures != 1 {
			t.Fatalf("breaker %+v, want 1 failure", b)
		}
	})
}
