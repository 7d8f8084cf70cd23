//go:build go1.25

package resilience

import (
	"context"
	"runtime"
	"sync"
	"testing"
)

// A call nested in a call that borrowed its caller's slot (a call
// WithNestedCalls, nested in another's attempt) finds that slot through
// the call it is nested in, and reads nothing of the call that lent it:
// that call's goroutine, its attempt over, gives its slot back meanwhile
// (run with -race).
func TestACallNestedInABorrowerReadsNothingOfTheLender(t *testing.T) {
	fast := 1e9 // no call waits for a token
	g := newGov(t, Config{AWS: ProviderConfig{
		MaxConcurrency: 1, GlobalMaxRPS: &fast, GlobalBurst: fast, AccountMaxRPS: &fast, AccountBurst: fast,
		Services: map[string]ServiceConfig{"ec2": {MaxRPS: fast, Burst: fast}, "iam": {MaxRPS: fast, Burst: fast}},
	}})
	for range 100 {
		var wg sync.WaitGroup
		err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
			borrowed := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				Do(ctx, ec2Subnets, func(ctx context.Context) error {
					close(borrowed)
					return Do(ctx, iamUsers, func(context.Context) error { return nil }, WithGovernor(g))
				}, WithGovernor(g), WithNestedCalls())
			}()
			<-borrowed
			runtime.Gosched()
			return nil
		}, WithGovernor(g), WithNestedCalls())
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
	}
	if used, waiting := g.provider("aws").scopes.accountBulkhead(ec2Vpcs.Account).InUse(); used != 0 || waiting != 0 {
		t.Fatalf("bulkhead %d used, %d waiting after the calls; want 0, 0", used, waiting)
	}
}
