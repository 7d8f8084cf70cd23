//go:build go1.25

package resilience

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// A quota of 15 requests an hour (GitHub's and AWS's slowest calls) is a
// max_rps of 0.0042, below the default floor of the adaptive rate (0.2
// rps). Setting the ceiling alone is enough, in YAML and in code alike,
// for a provider's leaf and for a service's, and the leaf paces its calls
// one every 238 s, within the default deadline of 900 s. An unset min_rps
// goes down with it, as far below it as the default floor is below the
// provider's default max_rps (0.2 of 20, 1%), but never below the slowest
// rate that serves a call within deadline_seconds, the slowest a min_rps
// may be set to (0.00112 rps for 900 s): a throttle without Retry-After
// halves the leaf (AIMD's decrease), twice here, and never to where a
// call waiting for its token would be refused. The other leaves keep the
// default floor, and a min_rps the user set is still a floor that a lower
// max_rps contradicts.
func TestAQuotaOfFifteenAnHourNeedsOnlyItsMaxRPS(t *testing.T) {
	const quota = 0.0042 // 15 an hour
	for _, doc := range []string{
		"aws: {services: {organizations: {max_rps: 0.0042}}}\n",
		"providers: {acme: {max_rps: 0.0042}}\n",
		"providers: {acme: {services: {orders: {max_rps: 0.0042}}}}\n",
		"aws: {services: {organizations.ListAccounts: {max_rps: 0.0042}}}\n",
	} {
		accepted(t, doc)
	}
	for i, cfg := range []Config{
		{AWS: ProviderConfig{Services: map[string]ServiceConfig{"organizations": {MaxRPS: quota}}}},
		{Providers: map[string]ProviderConfig{"acme": {MaxRPS: quota}}},
	} {
		if _, err := NewGovernor(cfg); err != nil {
			t.Errorf("NewGovernor (config %d, in code): %v", i, err)
		}
	}

	// The floor goes down with the ceiling where min_rps is unset, and only
	// there: 1% of it (the default 0.2 of 20), or the slowest rate the
	// deadline serves, 0.00112 rps (a token every 893 s) for 900 s.
	perDeadline := 0.00112
	aws := resolveProvider("aws", ProviderConfig{Services: map[string]ServiceConfig{
		"organizations": {MaxRPS: quota},
		"iam":           {MaxRPS: 0.19},
	}}, true)
	for _, c := range []struct {
		key   Scope
		floor float64
	}{
		{Scope{Service: "organizations"}, perDeadline},
		{Scope{Service: "iam"}, 0.19 * 0.2 / 20},
		{Scope{Service: "sts"}, 0.2},
		{Scope{Service: "secretsmanager"}, 0.2},
	} {
		if got := aws.leafSpec(c.key).Floor; math.Abs(got-c.floor) > 1e-12 {
			t.Errorf("aws %s: floor %v, want %v", c.key.Service, got, c.floor)
		}
	}
	acme := resolveProvider("acme", ProviderConfig{MaxRPS: quota, DeadlineSeconds: 3600, Services: map[string]ServiceConfig{"orders": {MaxRPS: 5}}}, true)
	if got := acme.leaf.Floor; math.Abs(got-0.000278) > 1e-12 {
		t.Errorf("acme's leaf with a deadline of an hour: floor %v, want the slowest rate it serves, 0.000278", got)
	}
	if got := acme.leafSpec(Scope{Service: "orders"}).Floor; got != 0.2 {
		t.Errorf("acme orders at 5 rps: floor %v, want the default 0.2", got)
	}
	// A floor the user set is a floor: a ceiling below it is a mistake.
	wantMistakes(t, "aws: {min_rps: 0.01, services: {organizations: {max_rps: 0.0042}}}\n",
		"ratelimit.aws.services.organizations.max_rps: 0.0042 rps is below the floor of the adaptive rate in force here (0.01 rps, ratelimit.aws.min_rps): set min_rps here at or below it to go this low")

	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"organizations": {MaxRPS: quota}}}})
		sc := Scope{Provider: "aws", Account: "123456789012", Service: "organizations", Operation: "ListAccounts"}
		start := time.Now()
		var at []time.Duration
		for range 3 {
			if err := Do(context.Background(), sc, func(context.Context) error {
				at = append(at, time.Since(start))
				return nil
			}, WithGovernor(g)); err != nil {
				t.Fatalf("call %d: %v", len(at)+1, err)
			}
		}
		q := quota
		gap := time.Duration(float64(time.Second) / q)
		for i, want := range []time.Duration{0, gap, 2 * gap} {
			if d := at[i] - want; d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("call %d sent at %v, want %v", i+1, at[i], want)
			}
		}
		// A throttle without Retry-After halves it; a second halves it to
		// the slowest rate the deadline serves, and a third leaves it there.
		for i, want := range []float64{quota / 2, perDeadline, perDeadline} {
			time.Sleep(2 * time.Second) // another congestion event
			n := 0
			Do(context.Background(), sc, failing(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
			if r := rate(g, sc); math.Abs(r-want) > 1e-12 {
				t.Errorf("rate after throttle %d: %v, want %v", i+1, r, want)
			}
		}
		// At its floor, a call waits for its token (893 s, the throttles
		// drained the bucket) and is sent, not refused for its deadline.
		from := time.Now()
		if err := Do(context.Background(), sc, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
			t.Errorf("a call at the floor: %v, want it sent", err)
		} else if waited := time.Since(from); waited > defaultDeadline {
			t.Errorf("a call at the floor waited %v, want at most the deadline", waited)
		}
	})
}

// A quota of no more than one call per deadline_seconds (2 requests an
// hour against the default 900 s; 0.01 rps against 100 s) is refused,
// since a call that waits for a token would be refused at once, and the
// error says what to set: the rate the deadline allows, or the deadline
// the rate needs (the provider's key, where a service's rate is too slow),
// each beyond the bound, so that setting it is enough: a call that waits a
// whole token is then sent.
func TestATokenSlowerThanTheDeadlineSaysWhatToSet(t *testing.T) {
	wantMistakes(t, "providers: {acme: {services: {orders: {max_rps: 0.00055}}}}\n",
		"ratelimit.providers.acme.services.orders.max_rps: 0.00055 rps is a token every 1820 s, longer than deadline_seconds (900 s, the default): a call that waits for one would be refused; set it to 0.00112 rps or more, or ratelimit.providers.acme.deadline_seconds to 1820 s or more")
	wantMistakes(t, "aws: {max_rps: 0.01, min_rps: 0.01, deadline_seconds: 60}\n",
		"ratelimit.aws.max_rps: 0.01 rps is a token every 100 s, longer than deadline_seconds (60 s): a call that waits for one would be refused; set it to 0.0167 rps or more, or ratelimit.aws.deadline_seconds to 101 s or more",
		"ratelimit.aws.min_rps: 0.01 rps is a token every 100 s, longer than deadline_seconds (60 s): a call that waits for one would be refused; set it to 0.0167 rps or more, or ratelimit.aws.deadline_seconds to 101 s or more")
	// What it says to set is accepted.
	accepted(t, "providers: {acme: {services: {orders: {max_rps: 0.00112}}}}\n")
	accepted(t, "providers: {acme: {deadline_seconds: 1820, services: {orders: {max_rps: 0.00055}}}}\n")
	accepted(t, "aws: {max_rps: 0.0167, min_rps: 0.0167, deadline_seconds: 60}\n")

	// A token every deadline_seconds exactly is too slow as well: a call
	// that waits that long for it has spent its deadline, and is refused
	// (DeadlineExceededError). What the error says to set is beyond it, so
	// that a call waiting a whole token is sent.
	wantMistakes(t, "providers: {acme: {deadline_seconds: 100, max_rps: 0.01}}\n",
		"ratelimit.providers.acme.max_rps: 0.01 rps is a token every 100 s, as long as deadline_seconds (100 s): a call that waits for one would be refused; set it to 0.0101 rps or more, or ratelimit.providers.acme.deadline_seconds to 101 s or more")
	wantMistakes(t, "providers: {acme: {deadline_seconds: 100, max_rps: 0.005}}\n",
		"ratelimit.providers.acme.max_rps: 0.005 rps is a token every 200 s, longer than deadline_seconds (100 s): a call that waits for one would be refused; set it to 0.0101 rps or more, or ratelimit.providers.acme.deadline_seconds to 201 s or more")
	wantMistakes(t, "providers: {acme: {max_rps: 0.001}}\n",
		"ratelimit.providers.acme.max_rps: 0.001 rps is a token every 1000 s, longer than deadline_seconds (900 s, the default): a call that waits for one would be refused; set it to 0.00112 rps or more, or ratelimit.providers.acme.deadline_seconds to 1010 s or more")
	for _, doc := range []string{
		"providers: {acme: {deadline_seconds: 100, max_rps: 0.0101}}\n",
		"providers: {acme: {deadline_seconds: 101, max_rps: 0.01}}\n",
		"providers: {acme: {deadline_seconds: 1010, max_rps: 0.001}}\n",
	} {
		cfg := accepted(t, doc)
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, cfg)
			sc := Scope{Provider: "acme", Account: "a", Service: "orders"}
			for i := range 2 { // the first takes the bucket's token, the second waits a whole one
				if err := Do(context.Background(), sc, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
					t.Errorf("%q: call %d: %v, want it sent", doc, i+1, err)
				}
			}
		})
	}
}
