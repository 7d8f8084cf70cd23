package test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/internal/storetest"
	"github.com/cloudg/cloudg/resilience"
)

// The slot a call holds across the SDK's attempts goes back when the call
// ends, after the last attempt's answer is recorded: a call waiting for
// the slot of one throttled with a Retry-After sees the pause, and is held
// by it, with a store whose throttle takes a round trip (fleet mode's).
func TestACallWaitingForTheSlotOfAThrottledOneIsHeldByItsPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("DescribeVpcs", tooManyRequests("30"), ok)
		var n atomic.Int32
		f.hold = func(*http.Request) {
			if n.Add(1) == 1 {
				time.Sleep(500 * time.Millisecond) // the first call holds the slot
			}
		}
		g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}},
			resilience.WithStateStore(storetest.SlowPauses(resilience.MemoryStore(), 5*time.Millisecond)))
		if err != nil {
			t.Fatal(err)
		}
		cfg := awsConfig(f, nil)
		if err := cloudgaws.Install(&cfg, testAccount, cloudgaws.WithGovernor(g), cloudgaws.WithRetryMode(aws.RetryModeStandard),
			cloudgaws.WithConfig(cloudgaws.Config{MaxRetries: ptr(0)})); err != nil {
			t.Fatal(err)
		}
		c := ec2.NewFromConfig(cfg)
		start := time.Now()
		var wg sync.WaitGroup
		wg.Go(func() { _ = describeVpcs(context.Background(), c) })
		synctest.Wait()
		if err := describeVpcs(context.Background(), c); err != nil {
			t.Fatalf("the call waiting for the slot: %v", err)
		}
		wg.Wait()
		sent := f.sentAt("DescribeVpcs")
		if len(sent) != 2 {
			t.Fatalf("%d requests, want the throttled one and the waiting one", len(sent))
		}
		if at := sent[1].Sub(start); at < 30*time.Second+505*time.Millisecond {
			t.Fatalf("the call waiting for the slot of one throttled at 500ms for 30s: sent at %v, want after the pause", at)
		}
		if free := freeSlots(g); free != 1 {
			t.Fatalf("%d free slots after the calls ended, want 1", free)
		}
	})
}
