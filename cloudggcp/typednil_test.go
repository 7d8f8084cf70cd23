package cloudggcp

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/api/googleapi"
)

// nilGoogleAPIError is an error whose chain holds a nil *googleapi.Error,
// whose Unwrap reads its receiver: what an application's helper returns
// when it wraps the error errors.As did not find (var ge *googleapi.Error;
// errors.As(err, &ge); return fmt.Errorf("...: %w", ge)).
func nilGoogleAPIError(what string) error {
	return fmt.Errorf("%s: %w", what, (*googleapi.Error)(nil))
}

// Unavailable reads any error its caller has: one whose chain holds a
// typed nil that panics as it is unwrapped is not PermissionDenied or
// Unimplemented, and Unavailable does not panic on it.
func TestUnavailableReadsAChainWithATypedNil(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Unavailable panicked: %v", r)
		}
	}()
	if Unavailable(nilGoogleAPIError("list")) {
		t.Error("Unavailable = true, want false")
	}
}

// Do reads the error its call returns, to tell a provider's answer from
// the context's end of gax's sleep: one whose chain holds a typed nil
// that panics as it is unwrapped, returned after a retry, must not crash
// Do. The call returns it, lost as errored, not to a panic.
func TestDoReadsAChainWithATypedNil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(0)
		srv.fail("BatchGetAssetsHistory", "", unavailable())
		gov := newGov(t, resilience.Config{})
		client := startBuf(t, srv, ClientOption(WithGovernor(gov)))
		ctx, stats := resilience.WithStats(context.Background())
		scope := Scope("projects/p1", "BatchGetAssetsHistory")
		call := func(ctx context.Context, opts ...gax.CallOption) (*assetpb.BatchGetAssetsHistoryResponse, error) {
			if _, err := client.BatchGetAssetsHistory(ctx, &assetpb.BatchGetAssetsHistoryRequest{Parent: "projects/p1"}, opts...); err != nil {
				return nil, err
			}
			return nil, nilGoogleAPIError("history")
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Do panicked: %v", r)
				}
			}()
			if _, err := Do(ctx, scope, call, WithGovernor(gov)); err == nil {
				t.Fatal("Do: nil error, want the call's")
			}
		}()
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.Calls != 1 || sc.Retries != 1 || sc.Errored != 1 || sc.Panicked != 0 {
			t.Errorf("stats %+v, want 1 call, 1 retry, lost as errored", sc)
		}
	})
}
