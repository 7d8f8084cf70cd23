package test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azsecrets"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// A task's first call that its scheduler's admission defers reaches the
// task through azcore's pipeline and the ARM client (or a pipeline with
// the per-retry policy alone, under azcore's retry), or through
// QueryResources (on a governed Resource Graph client, or on a plain one
// it paces itself), still saying so: errors.Is(err,
// resilience.ErrDeferred), which a task uses to return at once and not
// count the call as failed; the admission is told once. A refusal of
// WithMaxWait, with the same *resilience.WouldWaitError, is a lost call
// and does not match. Nothing is sent after the first call.
func TestADeferredFirstCallSaysErrDeferred(t *testing.T) {
	calls := []struct {
		name, route string
		call        func(ctx context.Context, e *env) error
	}{
		{"an ARM client", routeGroupGet, func(ctx context.Context, e *env) error {
			_, err := e.groups(subA).Get(ctx, "rg", nil)
			return err
		}},
		{"a governed Resource Graph client", routeGraph, func(ctx context.Context, e *env) error {
			_, err := e.graph().Resources(ctx, query, nil)
			return err
		}},
		{"QueryResources on a governed client", routeGraph, func(ctx context.Context, e *env) error {
			_, err := cloudgazure.QueryResources(ctx, e.graph(), query)
			return err
		}},
		{"the per-retry policy alone, in a pipeline of its own", routeVnetGet, func(ctx context.Context, e *env) error {
			_, perRetry := cloudgazure.Policies(e.opts()...)
			o := policy.ClientOptions{Transport: e.base.Transport, Retry: cloudgazure.RetryOptions(e.opts()...),
				PerRetryPolicies: []policy.Policy{perRetry}}
			pl, req := ownPipeline(t, &o)
			resp, err := pl.Do(req.WithContext(ctx))
			if err == nil {
				resp.Body.Close()
			}
			return err
		}},
		{"QueryResources on a plain client", routeGraph, func(ctx context.Context, e *env) error {
			_, err := cloudgazure.QueryResources(ctx, e.plainGraph(policy.RetryOptions{MaxRetries: -1}), query, e.opts()...)
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{Adaptive: ptr(false), Services: map[string]resilience.ServiceConfig{
					"resources": {MaxRPS: 1, Burst: 1}, "network": {MaxRPS: 1, Burst: 1}, "resourcegraph": {MaxRPS: 1, Burst: 1},
				}}})
				e.srv.graphPages = 1
				if err := c.call(context.Background(), e); err != nil { // the only token
					t.Fatal(err)
				}
				var a admissionRec
				err := c.call(resilience.WithAdmission(context.Background(), &a, 0), e)
				var ww *resilience.WouldWaitError
				if !errors.As(err, &ww) || !errors.Is(err, resilience.ErrDeferred) || a.deferred.Load() != 1 {
					t.Errorf("the first call under an admission, no token: %T %v (deferred %d); want errors.Is(err, resilience.ErrDeferred)", err, err, a.deferred.Load())
				}
				err = c.call(resilience.WithMaxWait(context.Background(), 0), e)
				if !errors.As(err, &ww) || errors.Is(err, resilience.ErrDeferred) {
					t.Errorf("a call under WithMaxWait(0), no token: %T %v; want a *resilience.WouldWaitError that is not ErrDeferred", err, err)
				}
				if n := e.srv.count(c.route); n != 1 {
					t.Errorf("%d requests sent, want the first alone", n)
				}
			})
		})
	}
}

// So through a real Key Vault client (azsecrets), with ClientOptions and
// with Policies: the first request of a fresh client (the one its
// challenge policy sends without a token to meet the vault's challenge),
// and a request of a client past its challenge, each a task's first call
// with no token left.
func TestADeferredFirstKeyVaultCallSaysErrDeferred(t *testing.T) {
	for _, opts := range []string{"ClientOptions", "Policies"} {
		t.Run(opts, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{Adaptive: ptr(false), Services: map[string]resilience.ServiceConfig{
					cloudgazure.ServiceKeyVault: {MaxRPS: 1, Burst: 2},
				}}})
				fake := &vaultTransport{}
				newClient := func() *azsecrets.Client {
					c, err := azsecrets.NewClient("https://myvault.vault.azure.net", fakeCred{}, &azsecrets.ClientOptions{ClientOptions: *governedOptions(gov, opts, fake)})
					if err != nil {
						t.Fatal(err)
					}
					return c
				}
				met := newClient()
				if _, err := met.GetSecret(context.Background(), "s", "", nil); err != nil { // the challenge and the request: both tokens
					t.Fatal(err)
				}
				for _, c := range []struct {
					name   string
					client *azsecrets.Client
				}{{"a fresh client's challenge", newClient()}, {"a client past its challenge", met}} {
					var a admissionRec
					_, err := c.client.GetSecret(resilience.WithAdmission(context.Background(), &a, 0), "s", "", nil)
					var ww *resilience.WouldWaitError
					if !errors.As(err, &ww) || !errors.Is(err, resilience.ErrDeferred) || a.deferred.Load() != 1 {
						t.Errorf("%s, the first call under an admission, no token: %T %v (deferred %d); want errors.Is(err, resilience.ErrDeferred)", c.name, err, err, a.deferred.Load())
					}
					_, err = c.client.GetSecret(resilience.WithMaxWait(context.Background(), 0), "s", "", nil)
					if !errors.As(err, &ww) || errors.Is(err, resilience.ErrDeferred) {
						t.Errorf("%s, a call under WithMaxWait(0), no token: %T %v; want a *resilience.WouldWaitError that is not ErrDeferred", c.name, err, err)
					}
				}
				if len(fake.answered) != 2 {
					t.Errorf("answers %v, want the first call's challenge and request alone", fake.answered)
				}
			})
		})
	}
}
