package test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"

	"github.com/cloudg/cloudg/cloudgazure"
)

// Resource Manager counts a subscription's reads apart from its writes and
// deletes. Remaining reads under 25 pause the whole subscription, its
// account, for a second (the spec's rule, TestLowRemainingReadsPauseSubscription),
// but the writes' and deletes' headers, which the spec does not name
// (x-ms-ratelimit-remaining-subscription-writes, -deletes, and their
// global forms), pause only the scope of the request they answered, its
// resource provider of the subscription: a read of another resource
// provider of the subscription goes at once, and the next request of the
// scope waits a second. Likewise a tenant-level write's low remaining
// tenant writes hold no tenant-level read of another resource provider.
//
// A write's 429 pauses its scope for the Retry-After, as the spec has a
// 429 pause the scope whatever the method: the reads of its resource
// provider wait it out with the write's retry, those of the
// subscription's other resource providers go at once.
func TestSpentWritesHoldOnlyTheirScope(t *testing.T) {
	type sender func(e *env) error
	get := func(e *env) error { _, err := e.groups(subA).Get(context.Background(), "rg", nil); return err }
	put := func(e *env) error {
		_, err := e.groups(subA).CreateOrUpdate(context.Background(), "rg", armresources.ResourceGroup{Location: ptr("westeurope")}, nil)
		return err
	}
	del := func(e *env) error { _, err := e.groups(subA).BeginDelete(context.Background(), "rg", nil); return err }
	vnet := func(e *env) error { _, err := e.vnets(subA).Get(context.Background(), "rg", "vnet", nil); return err }
	provider := func(ns string) sender {
		return func(e *env) error {
			c, err := cloudgazure.NewSubscriptionClient(armresources.NewProvidersClient, subB, fakeCred{}, e.base, e.opts()...)
			if err != nil {
				return err
			}
			_, err = c.GetAtTenantScope(context.Background(), ns, nil)
			return err
		}
	}
	register := func(ns string) sender {
		return func(e *env) error {
			c, err := cloudgazure.NewSubscriptionClient(armresources.NewProvidersClient, subB, fakeCred{}, e.base, e.opts()...)
			if err != nil {
				return err
			}
			_, err = c.RegisterAtManagementGroupScope(context.Background(), ns, "mg", nil)
			return err
		}
	}

	low := []struct {
		what, route, header, left string
		send                      sender
		free                      sender // a read of another resource provider, never held
		held                      sender // the next request of the scope, held 1 s
	}{
		{"write", routeGroupPut, "x-ms-ratelimit-remaining-subscription-writes", "9", put, vnet, put},
		{"write", routeGroupPut, "x-ms-ratelimit-remaining-subscription-global-writes", "149", put, vnet, put},
		{"delete", routeGroupDel, "x-ms-ratelimit-remaining-subscription-deletes", "9", del, vnet, del},
		{"delete", routeGroupDel, "x-ms-ratelimit-remaining-subscription-global-deletes", "149", del, vnet, del},
		{"tenant-level write", routeRegister, "x-ms-ratelimit-remaining-tenant-writes", "9",
			register("Microsoft.Compute"), provider("Microsoft.Network"), register("Microsoft.Compute")},
	}
	for _, c := range low {
		t.Run(c.header, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, fast())
				e.srv.okHeaders(c.route, c.header, c.left)
				if err := c.send(e); err != nil {
					t.Fatal(err)
				}
				e.srv.okHeaders(c.route) // the next answers say nothing
				start := time.Now()
				if err := c.free(e); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); d >= time.Millisecond {
					t.Errorf("%s: %s left on a %s: a read of another resource provider waited %v, want none",
						c.header, c.left, c.what, d)
				}
				start = time.Now()
				if err := c.held(e); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); !near(d, time.Second, time.Millisecond) {
					t.Errorf("%s: %s left: the next %s of its scope waited %v, want 1s", c.header, c.left, c.what, d)
				}
			})
		})
	}

	t.Run("a write's 429", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := memEnv(t, fast())
			e.srv.script(routeGroupPut, throttled("30"))
			start := time.Now()
			done := make(chan error, 1)
			go func() { done <- put(e) }()
			synctest.Wait() // the 429 is in: the write waits out its Retry-After
			if err := vnet(e); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d >= time.Millisecond {
				t.Errorf("a write throttled with Retry-After: 30: a read of another resource provider waited %v, want none", d)
			}
			if err := get(e); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d < 30*time.Second {
				t.Errorf("a write throttled with Retry-After: 30: a read of its scope waited %v, want 30s", d)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if hs := e.srv.hitsOf(routeGroupPut); len(hs) != 2 || gap(hs, 0, 1) < 30*time.Second {
				t.Fatalf("the throttled write's attempts %v: want its retry 30 s later", hs)
			}
		})
	})
}
