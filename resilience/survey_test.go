//go:build go1.25

package resilience

import (
	"context"
	"reflect"
	"testing"
	"testing/synctest"
)

// A Survey's Look of a scope is what Delay and Inspect report of it, and
// its Inspect what Inspect reports, in
// every state the scope may be in (a breaker open, an account's bucket
// spent, its slot taken, a scope, account or provider no call used, a
// provider turned off, the zero scope), in-process and
// with a shared store, one survey looking at every scope, as a report
// does.
func TestSurveyLooksAsDelayAndInspect(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := map[bool]string{false: "in-process", true: "shared store"}[shared]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rps, acctRPS := 50.0, 5.0
				off := false
				cfg := Config{
					AWS:   ProviderConfig{GlobalMaxRPS: &rps, GlobalBurst: 5, AccountMaxRPS: &acctRPS, AccountBurst: 2, MaxConcurrency: 1},
					Azure: ProviderConfig{Enabled: &off},
				}
				var opts []GovernorOption
				if shared {
					opts = append(opts, WithStateStore(&countingStore{Store: MemoryStore()}))
				}
				g := newGov(t, cfg, opts...)
				ok := func(context.Context) error { return nil }
				openBreaker(t, g) // ec2Subnets, account 123456789012
				spent := Scope{Provider: "aws", Account: "210987654321", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
				for range 3 { // the account's burst of 2, and one more
					if err := Do(context.Background(), spent, ok, WithGovernor(g)); err != nil {
						t.Fatal(err)
					}
				}
				// A call in flight holds the only slot of account 333333333333.
				busy := Scope{Provider: "aws", Account: "333333333333", Region: "eu-west-1", Service: "s3", Operation: "ListBuckets"}
				gd, err := g.Begin(context.Background(), busy)
				if err == nil {
					err = gd.Enter(context.Background())
				}
				if err != nil {
					t.Fatal(err)
				}
				defer func() { gd.End(nil); gd.Release() }()
				scopes := []Scope{
					{},
					ec2Subnets,
					{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeInstances"},
					spent,
					{Provider: "aws", Account: "210987654321", Region: "eu-west-1", Service: "sqs"},
					busy,
					{Provider: "aws", Account: "333333333333", Region: "eu-west-1", Service: "sqs"},
					{Provider: "aws", Account: "444444444444", Region: "eu-west-1", Service: "sqs"},
					{Provider: "gcp", Account: "a-project", Service: "compute"},
					{Provider: "azure", Account: "sub-1", Service: "compute"},
				}
				sv := g.Survey()
				whys := map[error]int{}
				for _, sc := range scopes {
					d, why := g.Delay(sc)
					snap := g.Inspect(sc)
					st := sv.Look(sc)
					whys[why]++
					if st.Wait != d || st.Why != why {
						t.Errorf("%v: Look says %v, %v; Delay %v, %v", sc, st.Wait, st.Why, d, why)
					}
					if !reflect.DeepEqual(st.Snapshot, snap) {
						t.Errorf("%v: Look's snapshot\n%+v\nInspect's\n%+v", sc, st.Snapshot, snap)
					}
					if got := sv.Inspect(sc); !reflect.DeepEqual(got, snap) {
						t.Errorf("%v: the survey's Inspect\n%+v\nthe governor's\n%+v", sc, got, snap)
					}
				}
				for _, why := range []error{nil, ErrCircuitOpen, ErrNoToken, ErrNoSlot} {
					if whys[why] == 0 {
						t.Errorf("setup: no scope for which Delay says %v (%v)", why, whys)
					}
				}
			})
		})
	}
}
