package test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	smithyendpoints "github.com/aws/smithy-go/endpoints"
	"github.com/cloudg/cloudg/resilience"
)

// refusingResolver is a program's endpoint resolver that knows no
// endpoint for the call (an EndpointResolverV2 of its own, say for a
// partition it does not serve), in words of throttling.
type refusingResolver struct{}

func (refusingResolver) ResolveEndpoint(context.Context, ec2.EndpointParameters) (smithyendpoints.Endpoint, error) {
	return smithyendpoints.Endpoint{}, errors.New("no endpoint: Rate exceeded")
}

// A call whose endpoint a custom resolver could not give (the SDK's
// "failed to resolve service endpoint") sent nothing: it is lost as
// errored, a local error, and the scope is neither slowed, paused nor
// failed, nor the error retried.
func TestAnEndpointTheResolverCannotGiveIsNoAnswer(t *testing.T) {
	f := newFake(t)
	cfg, g := tcpGoverned(t, f, fastEC2)
	ctx, stats := resilience.WithStats(context.Background())
	ctx, ledger := resilience.WithLedger(ctx, "vpcs")
	err := describeVpcs(ctx, ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.EndpointResolverV2 = refusingResolver{} }))
	if err == nil || !strings.Contains(err.Error(), "resolve service endpoint") {
		t.Fatalf("err %v, want the SDK's endpoint error", err)
	}
	if n := f.count("DescribeVpcs"); n != 0 {
		t.Fatalf("sent %d", n)
	}
	s := scopeStats(g, stats, ec2Key)
	if s.Calls != 1 || s.Retries != 0 || s.Throttled != 0 || s.TransientErrors != 0 || s.Errored != 1 {
		t.Errorf("ec2 counters %+v; want 1 call, errored, no retry, no throttle", s)
	}
	if ledger.Count(resilience.LossErrored) != 1 || ledger.Lost() != 1 {
		t.Errorf("ledger %q, want the call lost as errored", ledger.Describe())
	}
	snap := g.Inspect(vpcsScope)
	if snap.Leaf.Rate != snap.Leaf.Ceiling || snap.Leaf.Paused != 0 || snap.Breaker.Failures != 0 {
		t.Errorf("scope %+v; want its rate, pause and breaker untouched", snap)
	}
}
