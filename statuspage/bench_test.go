//go:build go1.25

package statuspage

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// many makes a governor with n live scopes, built through the public API
// as a scan makes them: n/100 accounts of AWS, each with a hundred
// scopes (five regions of twenty services), one scope in fifty throttled
// once (slowed, with a give-up) and the rest answered.
func many(tb testing.TB, n int) *resilience.Governor {
	tb.Helper()
	g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithReclaimAfter(24*time.Hour))
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	gov := resilience.WithGovernor(g)
	ok := func(context.Context) error { return nil }
	fail := func(context.Context) error { return throttled }
	for i := range n {
		sc := resilience.Scope{
			Provider: "aws",
			Account:  fmt.Sprintf("%012d", i/100),
			Region:   fmt.Sprintf("region-%d", i%100/20),
			Service:  fmt.Sprintf("svc%d", i%20),
		}
		fn := ok
		if i%50 == 7 {
			fn = fail
		}
		resilience.Do(ctx, sc, fn, gov, once)
	}
	return g
}

// BenchmarkPage is the cost of one page load (HTML, and JSON) of a
// governor with 1k, 10k and 100k live scopes, at the default limit.
func BenchmarkPage(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		g := many(b, n)
		h := New(WithGovernor(g))
		for _, format := range []string{"html", "json"} {
			b.Run(fmt.Sprintf("scopes=%d/%s", n, format), func(b *testing.B) {
				target := "/"
				if format == "json" {
					target = "/?format=json"
				}
				b.ReportAllocs()
				for b.Loop() {
					w := httptest.NewRecorder()
					h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
					if w.Code != http.StatusOK {
						b.Fatal(w.Code)
					}
				}
			})
		}
	}
}
