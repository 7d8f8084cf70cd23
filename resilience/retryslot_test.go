//go:build go1.25

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// The slot an SDK's call holds from its first attempt is its retries'
// too, through every wait between them: the spec's bulkhead holds one
// slot for one AWS API call, "so botocore's retries of that call reuse
// the slot" (section 2.5). A retry readied with Pace or Admit that waits
// for its token (a Retry-After of its own, or another call's pause of
// the scope) keeps it meanwhile, so that it cannot find the account's
// slots taken when its token is due.
func TestARetryKeepsItsCallsSlotWhileItWaitsForItsToken(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ready func(*Guard, context.Context) error
	}{
		{"Pace", (*Guard).Pace},
		{"Admit", (*Guard).Admit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
				gd, err := g.Begin(context.Background(), ec2Vpcs)
				if err != nil {
					t.Fatal(err)
				}
				if err := gd.Enter(context.Background()); err != nil {
					t.Fatal(err)
				}
				gd.After(throttleAfter(30 * time.Second))
				if _, err := gd.Retry(0); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- tc.ready(gd, context.Background()) }()
				time.Sleep(10 * time.Second)
				synctest.Wait()
				if s := g.Inspect(ec2Vpcs); s.InFlight != 1 {
					t.Errorf("%s's retry, 10s into its scope's 30s pause: %d slots held; want its call's 1 kept", tc.name, s.InFlight)
				}
				if err := <-done; err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				gd.After(nil)
				gd.End(nil)
			})
		})
	}
}
