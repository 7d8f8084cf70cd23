package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// config is the governor's configuration for the demo: the built-in
// defaults, with IAM at 10 rps, a cap of 2 calls in flight per Azure
// subscription, and Azure breakers that open after 3 failed calls and
// probe after 4 s.
const config = `
aws:
  services:
    iam: {max_rps: 10, burst: 10}
azure:
  max_concurrency: 2
  breaker_threshold: 3
  breaker_cooldown_seconds: 4
  breaker_max_cooldown_seconds: 8
`

// The demo's estate: two AWS accounts in two regions, a GCP project and an
// Azure subscription, each scope with the fake provider's true limit.
var estate = func() map[resilience.Scope]limit {
	m := map[resilience.Scope]limit{}
	for _, acct := range []string{"111111111111", "222222222222"} {
		for _, region := range []string{"eu-west-1", "us-east-1"} {
			// Configured at 20 rps; the provider allows 6.
			m[resilience.Scope{Provider: "aws", Account: acct, Region: region, Service: "ec2", Operation: "DescribeInstances"}] = limit{rps: 6}
			m[resilience.Scope{Provider: "aws", Account: acct, Region: region, Service: "ec2", Operation: "DescribeVpcs"}] = limit{rps: 40}
		}
		// IAM is global; the provider allows 2 rps and asks for 6 s of quiet.
		m[resilience.Scope{Provider: "aws", Account: acct, Service: "iam", Operation: "ListRoles"}] = limit{rps: 2, retryAfter: 6 * time.Second}
	}
	gcp := resilience.Scope{Provider: "gcp", Account: "projects/inventory-prod", Service: "cloudasset"}
	gcp.Operation = "ListAssets"
	m[gcp] = limit{rps: 1} // configured at 1.5 rps
	gcp.Operation = "SearchAllResources"
	m[gcp] = limit{rps: 20}
	const sub = "8f1c2d3e-4a5b-6c7d-8e9f-0a1b2c3d4e5f"
	m[resilience.Scope{Provider: "azure", Account: sub, Service: "network"}] = limit{rps: 30}
	// Slow answers: the subscription's two slots are taken, and the calls
	// of its other services queue for them.
	m[resilience.Scope{Provider: "azure", Account: sub, Service: "compute"}] = limit{rps: 30, latency: 400 * time.Millisecond}
	// Down for the first 20 s: its breaker opens, probes, opens again.
	m[resilience.Scope{Provider: "azure", Account: sub, Service: "keyvault"}] = limit{rps: 30, downFor: 20 * time.Second}
	return m
}()

// policy bounds each call of the workload: a few retries within 15 s.
var policy = resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 4, Deadline: 15 * time.Second})

// work runs perScope workers on each scope of the estate until ctx is
// done, each calling its scope through gov again and again: the scopes
// share their accounts' slots and their providers' retry budgets, as the
// collectors of an inventory scan do.
func work(ctx context.Context, gov *resilience.Governor, fake *fakeCloud, perScope int) {
	var wg sync.WaitGroup
	opts := []resilience.CallOption{resilience.WithGovernor(gov), policy}
	for sc := range estate {
		call := func(ctx context.Context) error { return fake.call(ctx, sc) }
		for range perScope {
			wg.Go(func() {
				for ctx.Err() == nil {
					// A refused call is skipped, and the collector comes
					// back when the breaker lets a probe through. A call
					// refused because its wait would outlast the run ends
					// the worker: so would every next one.
					var open *resilience.CircuitOpenError
					var late *resilience.DeadlineExceededError
					switch err := resilience.Do(ctx, sc, call, opts...); {
					case errors.As(err, &open):
						gov.Clock().Sleep(ctx, open.RetryAfter())
					case errors.As(err, &late) && late.Err != nil:
						return
					}
				}
			})
		}
	}
	wg.Wait()
}
