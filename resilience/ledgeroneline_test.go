//go:build go1.25

package resilience

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A lost call's line in the ledger names its scope on one line, as the
// governor's errors and Stats.Messages do: a scope whose part holds a
// character that is not printable (a newline a caller's service name
// brought) is written quoted, so that Describe and Reasons, which a
// collector writes to its log or its coverage record, forge no line.
// Before, the ledger wrote the scope as it was before each loss's words
// ("aws\u202e/1/us-east-1/ec2\nINFO forged: context canceled"), though the
// refusals it lists (an open breaker's, a wait's) quoted it.
func TestALedgerNamesAScopeOnOneLine(t *testing.T) {
	sc := Scope{Provider: "aws\u202e", Account: "1", Region: "us-east-1", Service: "ec2\nINFO forged"}
	synctest.Test(t, func(t *testing.T) {
		one := 1
		g := newGov(t, Config{Providers: map[string]ProviderConfig{"aws\u202e": {MaxAttempts: &one}}})
		r := newRun(context.Background())
		// Cancelled before it was sent.
		cctx, cancel := context.WithCancel(r.ctx)
		cancel()
		n := 0
		Do(cctx, sc, always(&n, nil), WithGovernor(g))
		// Failed, and given up, after its retries.
		Do(r.ctx, sc, always(&n, transientErr()), WithGovernor(g))
		Do(r.ctx, sc, always(&n, throttle()), WithGovernor(g))
		time.Sleep(time.Minute)
		// Errored: a local error.
		Do(r.ctx, sc, always(&n, context.DeadlineExceeded), WithGovernor(g))
		// Panicked.
		func() {
			defer func() { recover() }()
			Do(r.ctx, sc, func(context.Context) error { panic("boom") }, WithGovernor(g))
		}()
		reasons := r.ledger.Reasons()
		if len(reasons) == 0 {
			t.Fatal("no reason recorded")
		}
		for _, line := range reasons {
			if strings.ContainsAny(line, "\n\u202e") || !strings.Contains(line, strconv.Quote(sc.String())) {
				t.Errorf("the ledger's line %q; want the scope quoted, %s, on one line", line, strconv.Quote(sc.String()))
			}
		}
	})
}
