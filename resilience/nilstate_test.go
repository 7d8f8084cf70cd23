//go:build go1.25

package resilience

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// nilFor is the memory store that answers nil for the bucket or breaker
// of one key, a Store of the user's with a bug: a nil state.Bucket or
// state.Breaker is none the governor can use.
type nilFor struct {
	state.Store
	key, method string
}

func (s nilFor) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	if key == s.key && s.method == "Bucket" {
		return nil
	}
	return s.Store.Bucket(key, spec, now)
}

func (s nilFor) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	if key == s.key && s.method == "Breaker" {
		return nil
	}
	return s.Store.Breaker(key, spec)
}

// A Store that answers nil for one scope's bucket or breaker fails the
// calls of that scope (they panic, saying which method of the Store
// answered nil for which key), and no other: the governor kept the scope
// with its nil state, and every later call of any scope that took the
// reclaimer's step panicked on it, for good.
func TestANilStateFromTheStoreFailsItsScopeAlone(t *testing.T) {
	for _, method := range []string{"Bucket", "Breaker"} {
		t.Run(method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				key := Scope{Provider: "aws", Account: iamUsers.Account, Service: "iam"}.Key()
				g := newGov(t, Config{}, WithStateStore(nilFor{MemoryStore(), key, method}))
				ok := func(context.Context) error { return nil }
				call := func(sc Scope) (err error, panicked any) {
					defer func() { panicked = recover() }()
					return Do(context.Background(), sc, ok, WithGovernor(g)), nil
				}
				_, p := call(iamUsers)
				if want := fmt.Sprintf("state.Store's %s returned nil for %s", method, key); p == nil || !strings.Contains(fmt.Sprint(p), want) {
					t.Errorf("a call of the scope whose %s the store answered nil: panic %v, want one saying %q", method, p, want)
				}
				for i := range 3 {
					time.Sleep(time.Minute) // a step of the reclaimer is due
					if err, p := call(ec2Vpcs); err != nil || p != nil {
						t.Fatalf("call %d of another scope: %v, panic %v; want it through", i, err, p)
					}
				}
			})
		})
	}
}
