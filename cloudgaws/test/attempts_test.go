package test

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// A permanently throttled EC2 operation is sent max_retries + 1 times: 11
// by default, 4 with max_retries 3; the stats count one call, a throttle
// per attempt, a retry per retry and one give-up.
func TestAttemptCounts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []cloudgaws.Option
		attempts int
	}{
		{"default max_retries", nil, 11},
		{"max_retries 3", []cloudgaws.Option{cloudgaws.WithMaxRetries(3)}, 4},
		{"max_retries 3 from the config document", []cloudgaws.Option{cloudgaws.WithConfig(mustParse(t, "aws:\n  max_retries: 3\n  retry_mode: standard\n"))}, 4},
		{"max_retries 0", []cloudgaws.Option{cloudgaws.WithMaxRetries(0)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				f.always("DescribeVpcs", ec2Throttle)
				cfg, g := governed(t, f, resilience.Config{}, tc.opts...)
				ctx, stats := resilience.WithStats(context.Background())
				err := describeVpcs(ctx, ec2.NewFromConfig(cfg))

				if got := f.count("DescribeVpcs"); got != tc.attempts {
					t.Fatalf("sent %d times, want %d", got, tc.attempts)
				}
				var apiErr smithy.APIError
				if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "RequestLimitExceeded" {
					t.Fatalf("err = %v, want the provider's RequestLimitExceeded", err)
				}
				if tc.attempts > 1 {
					var maxErr *retry.MaxAttemptsError
					if !errors.As(err, &maxErr) || maxErr.Attempt != tc.attempts {
						t.Fatalf("err = %v, want MaxAttemptsError after %d attempts", err, tc.attempts)
					}
				}
				st := scopeStats(g, stats, ec2Key)
				want := resilience.Counters{Calls: 1, Throttled: int64(tc.attempts), Retries: int64(tc.attempts - 1), GaveUp: 1}
				if st.Calls != want.Calls || st.Throttled != want.Throttled || st.Retries != want.Retries || st.GaveUp != want.GaveUp {
					t.Fatalf("stats = %+v, want calls/throttled/retries/gave_up %d/%d/%d/%d", st, want.Calls, want.Throttled, want.Retries, want.GaveUp)
				}
			})
		})
	}
}

func mustParse(t *testing.T, doc string) cloudgaws.Config {
	t.Helper()
	c, err := cloudgaws.ParseConfig([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// failFirst is an aws.HTTPClient whose first request fails with err before
// it reaches the endpoint, as a stale keep-alive connection does.
type failFirst struct {
	next   aws.HTTPClient
	err    error
	failed atomic.Bool
}

func (c *failFirst) Do(req *http.Request) (*http.Response, error) {
	if c.failed.CompareAndSwap(false, true) {
		return nil, &url.Error{Op: req.Method, URL: req.URL.String(), Err: c.err}
	}
	return c.next.Do(req)
}

// The largest max_retries (WithMaxRetries(math.MaxInt): no bound but the
// retry budget and the deadline) is the most attempts, not the SDK's
// default 3: a call throttled five times then answered succeeds on its
// sixth attempt.
func TestLargestMaxRetries(t *testing.T) {
	for _, opt := range []cloudgaws.Option{
		cloudgaws.WithMaxRetries(math.MaxInt),
		cloudgaws.WithConfig(cloudgaws.Config{MaxRetries: ptr(math.MaxInt)}),
	} {
		synctest.Test(t, func(t *testing.T) {
			f := newFake(t)
			f.script("DescribeVpcs", ec2Throttle, ec2Throttle, ec2Throttle, ec2Throttle, ec2Throttle, ok)
			cfg, _ := governed(t, f, resilience.Config{}, opt)
			if err := describeVpcs(context.Background(), ec2.NewFromConfig(cfg)); err != nil || f.count("DescribeVpcs") != 6 {
				t.Fatalf("err = %v, sent %d, want the sixth attempt's success", err, f.count("DescribeVpcs"))
			}
		})
	}
}

// A retry the SDK makes of an answer the core reads as fatal (EC2's
// AuthFailure when the response's Date shows the client's clock off by
// more than 4 minutes: the SDK corrects its clock and retries) is counted
// and paid from the retry budget like any retry; an empty budget ends the
// SDK's loop once the call's free retries are spent.
func TestSDKRetriesOfFatalAnswersAreGoverned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("DescribeVpcs", reply{status: 401, code: "AuthFailure", msg: "AWS was not able to validate the provided access credentials",
			header: map[string]string{"Date": time.Now().Add(10 * time.Minute).UTC().Format(http.TimeFormat)}})
		cfg, g := governed(t, f, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		err := describeVpcs(ctx, ec2.NewFromConfig(cfg))
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "AuthFailure" || f.count("DescribeVpcs") != 2 {
			t.Fatalf("err = %v, sent %d, want AuthFailure after the SDK's one retry", err, f.count("DescribeVpcs"))
		}
		if st := scopeStats(g, stats, ec2Key); st.Calls != 1 || st.Retries != 1 || st.TransientErrors != 0 || st.Throttled != 0 {
			t.Fatalf("stats = %+v, want the retry counted", st)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("DescribeVpcs", ec2Unauthorized)
		everything := func() aws.Retryer { // a retryer of the user's that retries any error
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 6
				o.Retryables = []retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(error) aws.Ternary { return aws.TrueTernary })}
			})
		}
		cfg, _ := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: ptr(0)}}, cloudgaws.WithBaseRetryer(everything))
		err := describeVpcs(context.Background(), ec2.NewFromConfig(cfg))
		var te *cloudgaws.ThrottlingError
		var rbe *resilience.RetryBudgetExhaustedError
		if !errors.As(err, &te) || !errors.As(err, &rbe) || f.count("DescribeVpcs") != 3 {
			t.Fatalf("err = %v, sent %d, want the empty budget to end the loop after the two free retries", err, f.count("DescribeVpcs"))
		}
	})
}

// A connection closed before any answer (io.EOF from a stale connection) is
// a transient error: the SDK retries it, free as the first retries of a
// call are even with an empty budget, and a success after it leaves the
// breaker alone.
func TestSDKRetriesLocalErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: ptr(0)}})
		cfg.HTTPClient = &failFirst{next: cfg.HTTPClient, err: io.EOF}
		ctx, stats := resilience.WithStats(context.Background())
		if err := describeVpcs(ctx, ec2.NewFromConfig(cfg)); err != nil {
			t.Fatalf("err = %v, want the SDK's retry to succeed", err)
		}
		if got := f.count("DescribeVpcs"); got != 1 {
			t.Fatalf("the endpoint saw %d requests, want the retry", got)
		}
		st := scopeStats(g, stats, ec2Key)
		if st.Calls != 1 || st.Throttled != 0 || st.TransientErrors != 1 || st.Retries != 1 || st.GaveUp != 0 {
			t.Fatalf("stats = %+v", st)
		}
		if b, ok := g.Summary(nil).Breakers[mustScope(ec2Key+"/DescribeVpcs")]; ok {
			t.Fatalf("breaker %+v: a local error was charged to the scope", b)
		}
	})
}

// A request the SDK could not send (its *smithyhttp.RequestSendError, whose
// ConnectionError() is true) is a transient error whatever the transport's
// own error, here one the classifier knows nothing of: the SDK retries it,
// and the governor counts the transient error and the retry.
func TestSDKSendErrorsAreTransient(t *testing.T) {
	proxy := errors.New("proxy: connection closed")
	sendErr := &smithyhttp.RequestSendError{Err: &url.Error{Op: "POST", URL: "https://ec2.us-east-1.amazonaws.com/", Err: proxy}}
	if k := resilience.Classify(sendErr); k != resilience.Transient {
		t.Fatalf("%v: %v, want TRANSIENT", sendErr, k)
	}
	if k := resilience.Classify(sendErr.Err); k != resilience.Fatal {
		t.Fatalf("the transport's error alone: %v, want FATAL", k)
	}
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, g := governed(t, f, resilience.Config{})
		cfg.HTTPClient = &failFirst{next: cfg.HTTPClient, err: proxy}
		ctx, stats := resilience.WithStats(context.Background())
		if err := describeVpcs(ctx, ec2.NewFromConfig(cfg)); err != nil {
			t.Fatalf("err = %v, want the SDK's retry to succeed", err)
		}
		if got := f.count("DescribeVpcs"); got != 1 {
			t.Fatalf("the endpoint saw %d requests, want the retry", got)
		}
		if st := scopeStats(g, stats, ec2Key); st.Calls != 1 || st.TransientErrors != 1 || st.Retries != 1 || st.GaveUp != 0 {
			t.Fatalf("stats = %+v", st)
		}
	})
}
