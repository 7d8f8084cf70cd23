//go:build go1.25

package resilience

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/internal/chaintest"
	"github.com/cloudg/cloudg/internal/errread"
)

// A governed call that ends with an error whose chain cycles, is a DAG
// that is exponential as a tree, or is very wide or deep ends, and reads
// a bounded part of the chain: the governor asks the chain's errors for
// their causes a few reads' worth of times (a read asks errread.MaxNodes
// errors at most), through Do and through a Guard's End, a retry's
// included (End then looks for the refusal the retry may have been
// given). errors.Is and errors.As never end on a cycle: the governor does
// not run them on its callers' errors.
func TestAGovernedCallEndsOnAHostileChain(t *testing.T) {
	const most = 10 * errread.MaxNodes
	for _, c := range chaintest.Chains() {
		t.Run(c.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				ends := map[string]func(ctx context.Context){
					"Do": func(ctx context.Context) {
						n := 0
						if err := Do(ctx, iamUsers, always(&n, c.Err), WithGovernor(g)); err != c.Err {
							t.Errorf("Do returned %T, want the chain", err)
						}
					},
					"End": func(ctx context.Context) {
						gd, _ := g.Begin(ctx, iamUsers)
						if err := gd.Enter(ctx); err != nil {
							t.Fatal(err)
						}
						gd.End(c.Err)
					},
					"End of a retry": func(ctx context.Context) {
						gd := throttledRetry(t, g, ctx, ec2Subnets)
						gd.End(c.Err)
					},
				}
				for how, end := range ends {
					r := newRun(context.Background())
					c.Asks.Store(0)
					end(r.ctx)
					if n := c.Asks.Load(); n > most {
						t.Errorf("%s: the governor asked the chain's errors for their causes %d times; want at most %d", how, n, most)
					}
					if l := r.ledger.Lost(); l != 1 {
						t.Errorf("%s: %d calls lost, want 1", how, l)
					}
				}
			})
		})
	}
}
