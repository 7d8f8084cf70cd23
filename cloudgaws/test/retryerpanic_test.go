package test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// panicRetryer is a retryer of the caller's (WithBaseRetryer's) whose
// method named panics panics with boom, the first time the SDK calls it
// once armed is set (the client made): a retryer's code, run by the SDK's
// retry loop inside the governed call.
type panicRetryer struct {
	aws.RetryerV2
	panics string
	armed  *atomic.Bool // set once the client is made
	done   *atomic.Bool // set once it panicked
}

func (r panicRetryer) boom(method string) {
	if r.panics == method && r.armed.Load() && r.done.CompareAndSwap(false, true) {
		panic(boom)
	}
}

func (r panicRetryer) IsErrorRetryable(err error) bool {
	r.boom("IsErrorRetryable")
	return r.RetryerV2.IsErrorRetryable(err)
}

func (r panicRetryer) MaxAttempts() int {
	r.boom("MaxAttempts")
	return r.RetryerV2.MaxAttempts()
}

func (r panicRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	r.boom("RetryDelay")
	return r.RetryerV2.RetryDelay(attempt, err)
}

func (r panicRetryer) GetRetryToken(ctx context.Context, err error) (func(error) error, error) {
	r.boom("GetRetryToken")
	return r.RetryerV2.GetRetryToken(ctx, err)
}

func (r panicRetryer) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	r.boom("GetAttemptToken")
	return r.RetryerV2.GetAttemptToken(ctx)
}

// A retryer of the caller's that panics inside the SDK's retry loop, in
// whichever of its methods the loop calls (before the first attempt, or
// deciding the retry of a throttled one), ends the governed call as any code of the caller's that panics does
// (TestPanicIsRecordedAndGoesOnOverTCP): the panic reaches the caller as
// it was, the slot held across the SDK's retries is given back (the next
// call, under a cap of one, goes at once), the call is lost to the panic,
// once, and the scope's Guard state carries the next call, which
// succeeds.
func TestARetryerThatPanicsEndsTheCallOverTCP(t *testing.T) {
	for _, method := range []string{"IsErrorRetryable", "MaxAttempts", "RetryDelay", "GetRetryToken", "GetAttemptToken"} {
		t.Run(method, func(t *testing.T) {
			f := newFake(t)
			f.script("DescribeVpcs", ec2Throttle, ok, ok)
			rc := fastEC2
			rc.AWS.MaxConcurrency = 1
			var armed, done atomic.Bool
			base := func() aws.Retryer {
				return panicRetryer{RetryerV2: quickRetryer().(aws.RetryerV2), panics: method, armed: &armed, done: &done}
			}
			cfg, g := tcpGoverned(t, f, rc, cloudgaws.WithBaseRetryer(base))
			ctx, stats := resilience.WithStats(context.Background())
			ctx, ledger := resilience.WithLedger(ctx, "vpcs")
			client := ec2.NewFromConfig(cfg)
			armed.Store(true)
			if r := func() (r any) {
				defer func() { r = recover() }()
				_ = describeVpcs(ctx, client)
				return nil
			}(); r != boom {
				t.Fatalf("the caller got %v, want the retryer's panic", r)
			}
			if n := freeSlots(g); n != 1 {
				t.Fatalf("%d free slots after the panic, want the cap's 1", n)
			}
			next, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := describeVpcs(next, client); err != nil {
				t.Fatalf("the next call: %v", err)
			}
			lostOnly(t, g, stats, ledger, resilience.LossPanicked, 1)
			if tot := g.Summary(stats).Totals; tot.Calls != 2 {
				t.Errorf("%d calls counted, want 2: the panicked one and the next one", tot.Calls)
			}
		})
	}
}
