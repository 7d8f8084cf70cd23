package test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// brokenCredsError is a credentials provider's error that says its code
// and message as an SDK's API error does (smithy.APIError), and whose
// Unwrap reads its cause through a pointer left nil: only Unwrap panics.
type brokenCredsError struct{ cause *struct{ err error } }

func (brokenCredsError) Error() string                 { return "credential source: access denied" }
func (e brokenCredsError) Unwrap() error               { return e.cause.err }
func (brokenCredsError) ErrorCode() string             { return "AccessDenied" }
func (brokenCredsError) ErrorMessage() string          { return "access denied" }
func (brokenCredsError) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

// An attempt whose credentials fail with an error whose Unwrap panics
// does not crash the governed call where the SDK does not: a client whose
// retries are off (aws.NopRetryer) reads the error only for its code and
// as an API error (the retry loop's clock-skew check, the client's span),
// which its outermost error answers without being unwrapped. The call
// ends with the SDK's error, nothing is sent, and it is lost as errored
// (a local error), not to a panic; the scope is untouched. (With the
// SDK's standard retryer, the SDK's own retry loop panics on such an
// error, in its NoRetryCanceledError check, which no middleware can
// prevent.)
func TestAnAttemptWhoseCredentialsErrorPanicsAsItUnwrapsEndsTheCall(t *testing.T) {
	f := newFake(t)
	cfg, g := tcpGoverned(t, f, fastEC2, cloudgaws.WithBaseRetryer(func() aws.Retryer { return aws.NopRetryer{} }))
	cfg.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, brokenCredsError{}
	})
	ctx, stats := resilience.WithStats(context.Background())
	ctx, ledger := resilience.WithLedger(ctx, "vpcs")
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("the call panicked: %v", p)
			}
		}()
		err = describeVpcs(ctx, ec2.NewFromConfig(cfg))
	}()
	if err == nil || !strings.Contains(err.Error(), "get identity") {
		t.Fatalf("err %v, want the SDK's credentials error", err)
	}
	if n := f.count("DescribeVpcs"); n != 0 {
		t.Fatalf("DescribeVpcs sent %d times without credentials", n)
	}
	s := scopeStats(g, stats, ec2Key)
	if s.Calls != 1 || s.Throttled != 0 || s.TransientErrors != 0 || s.Failed != 0 || s.Panicked != 0 || s.Errored != 1 {
		t.Fatalf("ec2 counters %v; want one call, no throttle, no transient error, lost as errored, not to a panic", s)
	}
	if ledger.Count(resilience.LossErrored) != 1 || ledger.Lost() != 1 {
		t.Fatalf("ledger %q, want the call lost as errored", ledger.Describe())
	}
	snap := g.Inspect(vpcsScope)
	if snap.Leaf.Rate != snap.Leaf.Ceiling || snap.Leaf.Paused != 0 || snap.Breaker.Failures != 0 || snap.InFlight != 0 {
		t.Fatalf("scope %+v; want its rate, pause and breaker untouched, no slot held", snap)
	}
}
