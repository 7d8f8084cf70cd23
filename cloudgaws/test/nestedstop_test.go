package test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// An attempt whose credentials fail with an error that holds the
// governor's refusal of a call made inside it (STS's, whose breaker is
// open) beside STS's throttle answer is that call's stop: the guard
// records the refusal alone, which the core reads as another call's
// stop, so EC2's scope, to which nothing was sent, is neither throttled
// nor paused nor failed for STS's throttle.
func TestAStopBesideAnotherServicesThrottleIsNoThrottleOfTheScope(t *testing.T) {
	f := newFake(t)
	cfg, g := tcpGoverned(t, f, fastEC2, cloudgaws.WithMaxRetries(2), cloudgaws.WithBaseRetryer(quickRetryer))
	sts := resilience.Scope{Provider: "aws", Account: testAccount, Region: testRegion, Service: "sts"}
	cfg.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.Join(
			&smithy.GenericAPIError{Code: "Throttling", Message: "Rate exceeded"},
			&resilience.CircuitOpenError{Scope: sts, Wait: time.Second},
		)
	})
	ctx, stats := resilience.WithStats(context.Background())
	if err := describeVpcs(ctx, ec2.NewFromConfig(cfg)); err == nil {
		t.Fatal("DescribeVpcs succeeded without credentials")
	}
	if n := f.count("DescribeVpcs"); n != 0 {
		t.Fatalf("DescribeVpcs sent %d times without credentials", n)
	}
	s := scopeStats(g, stats, ec2Key)
	snap := g.Inspect(vpcsScope)
	if s.Throttled != 0 || s.GaveUp != 0 || s.Failed != 0 || snap.Leaf.Rate != snap.Leaf.Ceiling || snap.Leaf.Paused != 0 || snap.Breaker.Failures != 0 {
		t.Fatalf("ec2 counters %v, scope %+v; want no throttle, no give-up, no failure, its rate, pause and breaker untouched", s, snap)
	}
}
