//go:build go1.25

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A guard that follows its scope to the table in force while a Configure
// is published pairs the entry it finds with the provider that owns it:
// here the guard's entry was retired by a Configure that disabled the
// provider, and the one that enables it again, with a provider bucket of
// 0.5 rps and burst 1, comes between the guard's read of the provider and
// its lookup, which the retired table sends to the new one. Before, the
// guard kept the disabled provider's settings with the new entry: its
// request took no token, and the next call of the provider went with it
// at once, two requests in 0s through a bucket of burst 1.
func TestAGuardFollowingAConfigureTakesTheNewProvidersToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx := context.Background()
		gd, _ := g.Begin(ctx, iamUsers)
		if err := gd.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		gd.Release()
		gd.End(nil)
		off, half := false, 0.5
		if err := g.Configure(Config{AWS: ProviderConfig{Enabled: &off}}); err != nil {
			t.Fatal(err)
		}
		once := false
		testHookResolve = func() {
			if !once {
				once = true
				if err := g.Configure(Config{AWS: ProviderConfig{GlobalMaxRPS: &half, GlobalBurst: 1}}); err != nil {
					t.Error(err)
				}
			}
		}
		defer func() { testHookResolve = nil }()
		start := time.Now()
		if err := gd.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		testHookResolve = nil
		if !once {
			t.Fatal("setup: the guard did not follow its scope")
		}
		if !gd.p.set.enabled || gd.p != g.provider("aws") {
			t.Errorf("the guard's provider is not the one in force (enabled %v)", gd.p.set.enabled)
		}
		gd.Release()
		gd.End(nil)
		Do(ctx, ec2Subnets, func(context.Context) error { return nil }, WithGovernor(g))
		if d := time.Since(start); d < 2*time.Second {
			t.Fatalf("the guard's request and the next call went %v apart through a provider bucket of 0.5 rps, burst 1", d)
		}
	})
}
