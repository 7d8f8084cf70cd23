package test

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	gax "github.com/googleapis/gax-go/v2"

	"github.com/cloudg/cloudg/cloudggcp"
	"github.com/cloudg/cloudg/resilience"
)

// Do over a REST client built with RESTClientOption: the Transport's
// request, made inside Do's call on the account whose bulkhead slot Do
// holds, is nested in Do's call and borrows that slot, rather than wait
// for it. Before, with one slot (max_concurrency 1, or as many calls of
// Do at once as the account has slots), the request waited for the slot
// its own Do held until the context's deadline: "deadline exceeded for
// gcp/projects/p1/*/compute/instances_get after 10s".
func TestDoOverAGovernedRESTClientDoesNotWaitForItsOwnSlot(t *testing.T) {
	_, c, gov := setup(t, func(pc *resilience.ProviderConfig) { pc.MaxConcurrency = 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inst, err := cloudggcp.Do(ctx, scope("instances_get"), func(ctx context.Context, opts ...gax.CallOption) (*computepb.Instance, error) {
		return c.Get(ctx, &computepb.GetInstanceRequest{Project: "p1", Zone: "z", Instance: "vm-1"}, opts...)
	}, cloudggcp.WithGovernor(gov))
	if err != nil || inst.GetName() != "vm-1" {
		t.Fatalf("instance %q, err %v; want vm-1", inst.GetName(), err)
	}
	if n := gov.Inspect(scope("instances_get")).InFlight; n != 0 {
		t.Fatalf("%d slots held, want none", n)
	}
}
