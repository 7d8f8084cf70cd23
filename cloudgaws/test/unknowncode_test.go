package test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// An error answer whose body names no code reaches the caller with the
// SDK's placeholder code UnknownError. The code says nothing, and neither
// does a status on no list (400), so the message decides: "Rate exceeded"
// is throttling, in both wire protocols. The SDK does not retry the
// code, so the call ends after one attempt; the governor halved the
// scope's rate for the throttle, and the call is a give-up that counts
// towards the breaker. An UnknownError 400 that mentions no throttling
// stays a fatal answer, which proves the service reachable.
func TestUnknownErrorCodeIsClassifiedByItsMessage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		service string
		call    func(ctx context.Context, f *fakeAWS, g *resilience.Governor) (error, resilience.Scope)
	}{
		{"ec2query", "ec2", func(ctx context.Context, f *fakeAWS, g *resilience.Governor) (error, resilience.Scope) {
			cfg, _ := governedWith(t, f, g)
			return describeVpcs(ctx, ec2.NewFromConfig(cfg)), vpcsScope
		}},
		{"awsJson1.1", "secretsmanager", func(ctx context.Context, f *fakeAWS, g *resilience.Governor) (error, resilience.Scope) {
			cfg, _ := governedWith(t, f, g)
			return getSecret(ctx, secretsmanager.NewFromConfig(cfg)),
				resilience.Scope{Provider: "aws", Account: testAccount, Region: testRegion, Service: "secretsmanager"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				op := "DescribeVpcs"
				if tc.service == "secretsmanager" {
					op = "GetSecretValue"
				}
				key := "aws/" + testAccount + "/" + testRegion + "/" + tc.service
				g, err := resilience.NewGovernor(resilience.Config{})
				if err != nil {
					t.Fatal(err)
				}

				f.always(op, reply{status: 400, msg: "Throttling: Rate exceeded"})
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "aws_"+tc.service)
				err, scope := tc.call(ctx, f, g)
				var apiErr smithy.APIError
				if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "UnknownError" {
					t.Fatalf("err = %v, want the SDK's UnknownError", err)
				}
				if k := resilience.Classify(err); k != resilience.Throttled {
					t.Fatalf("%v classified %v, want THROTTLED", err, k)
				}
				if got := f.count(op); got != 1 {
					t.Fatalf("sent %d times: the SDK retries no UnknownError", got)
				}
				st := scopeStats(g, stats, key)
				if st.Calls != 1 || st.Throttled != 1 || st.GaveUp != 1 {
					t.Fatalf("stats = %+v, want one throttled call given up", st)
				}
				if n, _ := ledger.Counts(); n != 1 {
					t.Fatalf("ledger: %d give-ups", n)
				}
				if leaf := g.Inspect(scope).Leaf; leaf.Rate != leaf.Ceiling/2 {
					t.Fatalf("leaf %+v: the throttle did not halve the rate", leaf)
				}
				if b := g.Summary(nil).Breakers[scope]; b.Failures != 1 {
					t.Fatalf("breaker %+v, want one failure", b)
				}

				f.always(op, reply{status: 400, msg: "The request is invalid."})
				ctx, stats = resilience.WithStats(context.Background())
				err, _ = tc.call(ctx, f, g)
				if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "UnknownError" || resilience.Classify(err) != resilience.Fatal {
					t.Fatalf("err = %v, classified %v; want a fatal UnknownError", err, resilience.Classify(err))
				}
				if st := scopeStats(g, stats, key); st.Throttled != 0 || st.GaveUp != 0 || st.TransientErrors != 0 {
					t.Fatalf("a fatal answer counted: %+v", st)
				}
				if b := g.Summary(nil).Breakers[scope]; b.Failures != 0 || b.State != state.Closed {
					t.Fatalf("breaker %+v: the fatal answer did not reset it", b)
				}
			})
		})
	}
}

// governedWith installs g on an in-memory config for the fake endpoint,
// with the SDK's standard retry mode.
func governedWith(t *testing.T, f *fakeAWS, g *resilience.Governor) (aws.Config, *resilience.Governor) {
	t.Helper()
	cfg := awsConfig(f, nil)
	if err := cloudgaws.Install(&cfg, testAccount, cloudgaws.WithGovernor(g), cloudgaws.WithRetryMode(aws.RetryModeStandard)); err != nil {
		t.Fatal(err)
	}
	return cfg, g
}
