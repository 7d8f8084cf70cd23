package test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// A region that is not plain text (one read from a file with its newline,
// AWS_REGION="us-east-1\n") names no scope's region: a scope's parts
// reach log lines, metric labels and the status page, where a newline
// would split a line. The SDK refuses to send the call (no endpoint for
// such a region); it is governed, and lost as errored, in the account's
// scope of no region (*), and Scope says so.
func TestARegionThatIsNotPlainNamesNoScope(t *testing.T) {
	f := newFake(t)
	cfg, g := tcpGoverned(t, f, fastEC2)
	cfg.Region = "us-east-1\n"
	ctx, st := resilience.WithStats(context.Background())
	if err := describeVpcs(ctx, ec2.NewFromConfig(cfg)); err == nil {
		t.Fatal("DescribeVpcs in a region with a newline: no error")
	}
	want := "aws/" + testAccount + "/*/ec2"
	for sc := range g.Summary(st).Scopes {
		if sc.String() != want {
			t.Errorf("scope %q, want %q", sc.String(), want)
		}
	}
	if c := scopeStats(g, st, want); c.Calls != 1 || c.Errored != 1 {
		t.Errorf("%s: %+v, want 1 call lost as errored", want, c)
	}
	if sc, err := cloudgaws.Scope(cfg, ec2.ServiceID, "DescribeVpcs"); err != nil || sc.Region != "" {
		t.Errorf("Scope = %+v, %v; want no region", sc, err)
	}
}
