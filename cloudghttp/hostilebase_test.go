package cloudghttp_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/cloudg/cloudg/internal/chaintest"
	"github.com/cloudg/cloudg/internal/errread"
	"github.com/cloudg/cloudg/resilience"
)

// errorBase fails every request with err.
type errorBase struct{ err error }

func (b errorBase) RoundTrip(*http.Request) (*http.Response, error) { return nil, b.err }

// A base transport (the caller's code) that fails a request with an
// error whose chain cycles, is a DAG of joins exponential as a tree, or
// is very wide or deep: the Transport reads it (for a governor's stop a
// call nested in the attempt met, a *url.Error of another URL, its
// kind) and the request ends, the governor asking the chain's errors for
// their causes a few reads' worth of times (a read asks
// errread.MaxNodes errors at most). net/http hands such an error to the
// caller without reading it; errors.As and errors.Is would never end on
// a cycle.
func TestABaseErrorOfAHostileChainEnds(t *testing.T) {
	const most = 10 * errread.MaxNodes
	for _, c := range chaintest.Chains() {
		t.Run(c.Name, func(t *testing.T) {
			gov := newGov(t, resilience.Config{})
			ctx, ledger := resilience.WithLedger(context.Background(), "items")
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.example.com/items", nil)
			c.Asks.Store(0)
			resp, err := client(errorBase{c.Err}, gov, withAttempts(3)).Do(req)
			if err == nil {
				_ = resp.Body.Close()
				t.Fatal("the request succeeded")
			}
			if n := c.Asks.Load(); n > most {
				t.Errorf("the Transport asked the chain's errors for their causes %d times; want at most %d", n, most)
			}
			if n := ledger.Lost(); n != 1 {
				t.Errorf("%d calls lost, want 1 (%q)", n, ledger.Describe())
			}
		})
	}
}
