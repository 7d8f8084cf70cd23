package test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
)

// The Retry event of an AWS SDK retry reports, as its Wait, the delay
// before the retry (observe.Event's godoc; cloudgotel's cloudg.retry
// delay attribute): the SDK's backoff, which the SDK's retry loop sleeps,
// not 0. The retryer here backs off 1 s (fixedStandard): a 500 and a
// throttle without a hint, each retried once, 1 s later, each a Retry
// event whose Wait is 1 s; a throttle whose x-amz-retry-after (1.5 s) is
// longer than the backoff, slept by the SDK as that, a Retry event whose
// Wait is 1.5 s.
func TestAnSDKRetryEventCarriesTheSDKsBackoff(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first reply
		want  time.Duration
	}{
		{"transient", ec2Internal, time.Second},
		{"throttle", ec2Throttle, time.Second},
		{"throttle with x-amz-retry-after", reply{status: 503, code: "RequestLimitExceeded", msg: "Request limit exceeded.", header: map[string]string{"X-Amz-Retry-After": "1500"}}, 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var waits []time.Duration
				g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(observe.Func(func(e observe.Event) {
					if e.Kind == observe.Retry {
						mu.Lock()
						waits = append(waits, e.Wait)
						mu.Unlock()
					}
				})))
				if err != nil {
					t.Fatal(err)
				}
				f := newFake(t)
				f.script("DescribeVpcs", tc.first, ok)
				cfg := awsConfig(f, nil)
				if err := cloudgaws.Install(&cfg, testAccount, cloudgaws.WithGovernor(g), cloudgaws.WithBaseRetryer(fixedStandard)); err != nil {
					t.Fatal(err)
				}
				if err := describeVpcs(context.Background(), ec2.NewFromConfig(cfg)); err != nil {
					t.Fatalf("DescribeVpcs: %v", err)
				}
				sent := f.sentAt("DescribeVpcs")
				if len(sent) != 2 {
					t.Fatalf("%d requests, want 2", len(sent))
				}
				slept := sent[1].Sub(sent[0])
				mu.Lock()
				defer mu.Unlock()
				if len(waits) != 1 || waits[0] != tc.want {
					t.Errorf("Retry events' Wait %v, want [%v]: the SDK slept %v before the retry", waits, tc.want, slept)
				}
			})
		})
	}
}
