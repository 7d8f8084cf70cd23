//go:build go1.25

package resilience

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
)

// Inspect of a scope no call has used shows what its first call would
// find (Inspect's godoc): its leaf, account and provider buckets read as
// the buckets the call makes read at that instant, whatever their
// configured rates and bursts: a rate past a token per nanosecond, a
// burst of more tokens than a bucket keeps, a max_rps whose default
// burst, twice it, is past a float64 (read as +Inf, no number JSON
// writes). And the snapshot marshals to JSON.
func TestInspectOfANewScopeReadsAsTheBucketsItsCallMakes(t *testing.T) {
	for _, c := range []struct {
		name       string
		rate, brst float64
	}{
		{"max_rps 1e308", 1e308, 0},
		{"max_rps 1e10", 1e10, 0},
		{"burst 1e12", 1, 1e12},
		{"max_rps 20", 20, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rate := c.rate
				cfg := Config{
					Azure: ProviderConfig{AccountMaxRPS: &rate, AccountBurst: c.brst, GlobalMaxRPS: &rate, GlobalBurst: c.brst,
						Services: map[string]ServiceConfig{"network": {MaxRPS: c.rate, Burst: c.brst}}},
				}
				g := newGov(t, cfg)
				sc := Scope{Provider: "azure", Account: "sub-1", Service: "network"}
				before := g.Inspect(sc)
				if _, err := json.Marshal(before); err != nil {
					t.Errorf("the snapshot of a scope no call used does not marshal: %v", err)
				}
				gd, err := g.Begin(context.Background(), sc) // makes the scope's buckets, takes no token
				if err != nil {
					t.Fatal(err)
				}
				defer gd.End(nil)
				after := g.Inspect(sc)
				for _, b := range []struct {
					level         string
					before, after any
				}{{"leaf", before.Leaf, after.Leaf}, {"account", before.Account, after.Account}, {"provider", before.Provider, after.Provider}} {
					if b.before != b.after {
						t.Errorf("%s bucket: %+v before the scope's first call made it, %+v after", b.level, b.before, b.after)
					}
				}
			})
		})
	}
}
