package test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/resilience"
)

// coreThrottle is a provider's throttle as resilience.Call meets it: an
// error code the core reads as throttling, with a Retry-After.
type coreThrottle struct{ after time.Duration }

func (e coreThrottle) Error() string                 { return "ThrottlingException: Too many requests" }
func (e coreThrottle) ErrorCode() string             { return "ThrottlingException" }
func (e coreThrottle) RetryAfter() time.Duration     { return e.after }
func (e coreThrottle) HTTPStatusCode() int           { return 429 }
func (e coreThrottle) ErrorMessage() string          { return "Too many requests" }
func (e coreThrottle) ErrorFault() smithy.ErrorFault { return smithy.FaultServer }

// A throttle whose retry the deadline cuts reads as the throttle it is,
// whichever wait the deadline cut and whichever way the call was made: an
// AWS client's call whose provider Retry-After would pass the context's
// deadline, one whose retry's rate token would come after it, and
// resilience.Call in the same case (the spec: "when retrying stops, your
// original exception is re-raised, not a wrapper"; cloudgazure's policy
// does the same). The error is the provider's answer (under the SDK's
// *smithy.OperationError for an AWS client), not the core's
// *resilience.DeadlineExceededError, which resilience.Classify reads as
// Transient: resilience.Classify says Throttled, resilience.DescribeError
// (every coverage record) says "throttled: ...", errors.Is(err,
// context.DeadlineExceeded) does not hold. That the deadline cut it is in
// the task's ledger: one give-up, "deadline exceeded after throttled".
func TestAThrottleTheDeadlineCutReadsAsTheThrottle(t *testing.T) {
	check := func(t *testing.T, how string, err error, ledger *resilience.Ledger) {
		t.Helper()
		var de *resilience.DeadlineExceededError
		if errors.As(err, &de) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: err %v is the core's deadline error (errors.As %v); want the provider's answer, as resilience.Call returns it", how, err, errors.As(err, &de))
		}
		if k := resilience.Classify(err); k != resilience.Throttled {
			t.Errorf("%s: Classify = %v, want %v: a throttle the deadline cut is still a throttle", how, k, resilience.Throttled)
		}
		if d := resilience.DescribeError(err); !strings.HasPrefix(d, "throttled: ") {
			t.Errorf("%s: DescribeError = %q, want it prefixed \"throttled: \"", how, d)
		}
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || !strings.Contains(apiErr.ErrorCode(), "Throttl") && apiErr.ErrorCode() != "RequestLimitExceeded" {
			t.Errorf("%s: err %v; want the provider's throttle found by errors.As", how, err)
		}
		if d := ledger.Describe(); !strings.Contains(d, "deadline exceeded after throttled") || ledger.Count(resilience.LossGaveUp) != 1 {
			t.Errorf("%s: ledger %q; want one give-up, deadline exceeded after throttled", how, d)
		}
	}

	t.Run("Retry-After past the deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newFake(t)
			f.always("GetSecretValue", tooManyRequests("60"))
			cfg, _ := governed(t, f, resilience.Config{})
			ctx, ledger := resilience.WithLedger(context.Background(), "secrets")
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			err := getSecret(ctx, secretsmanager.NewFromConfig(cfg))
			var respErr *awshttp.ResponseError
			var opErr *smithy.OperationError
			if f.count("GetSecretValue") != 1 || !errors.As(err, &respErr) || respErr.HTTPStatusCode() != 429 || !errors.As(err, &opErr) {
				t.Fatalf("err %v, sent %d; want the 429 once, under the SDK's OperationError", err, f.count("GetSecretValue"))
			}
			check(t, "a Retry-After past the deadline", err, ledger)
		})
	})
	t.Run("retry token past the deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newFake(t)
			f.always("DescribeVpcs", ec2Throttle)
			cfg, _ := governed(t, f, slowEC2)
			ctx, ledger := resilience.WithLedger(context.Background(), "vpcs")
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			err := describeVpcs(ctx, ec2.NewFromConfig(cfg))
			check(t, "a retry's token past the deadline", err, ledger)
		})
	})
	t.Run("resilience.Call", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g, err := resilience.NewGovernor(resilience.Config{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, ledger := resilience.WithLedger(context.Background(), "core")
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			scope := resilience.Scope{Provider: "aws", Account: testAccount, Region: testRegion, Service: "secretsmanager", Operation: "GetSecretValue"}
			err = resilience.Do(ctx, scope, func(context.Context) error { return coreThrottle{60 * time.Second} }, resilience.WithGovernor(g))
			check(t, "resilience.Call", err, ledger)
		})
	})
}
