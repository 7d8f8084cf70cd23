//go:build go1.25

package cloudggcp

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// grpc-go's own ResourceExhausted for a message over a size limit (its
// rpc_util.go and stream.go, v1.67 to v1.85) is no throttle: the same
// message is as large on every retry, so retrying cannot help, and
// slowing the scope helps no other call. It is FATAL. One received
// (the answer's, or the server's "received message larger than max" for
// the request it refused) is an answer; one grpc refused to send
// ("trying to send", "message too large") is no answer, nothing having
// left. The service's own ResourceExhausted stays a throttle.
func TestClassifyGRPCMessageSizeIsFatal(t *testing.T) {
	for _, tc := range []struct {
		msg    string
		answer bool
	}{
		{"grpc: received message larger than max (4194305 vs. 4194304)", true},
		{"grpc: received message larger than max length allowed on current machine (4294967296 vs. 2147483647)", true},
		{"grpc: message after decompression larger than max (4194305 vs. 4194304)", true},
		{"grpc: received message after decompression larger than max 4194304", true},
		{"grpc: received message after decompression larger than max (4194305 vs. 4194304)", true},
		{"trying to send message larger than max (2147483648 vs. 2147483647)", false},
		{"grpc: message too large (4294967296 bytes)", false},
		// grpc-go v1.67's server's status for its own unary answer
		// over its send limit (server.go's sendResponse), which the
		// client receives: an answer, and as large on every retry.
		{"grpc: trying to send message larger than max (4194305 vs. 4194304)", true},
	} {
		st := status.New(codes.ResourceExhausted, tc.msg)
		for name, err := range map[string]error{"status": st.Err(), "api": apiErr(t, st.Err()), "wrapped": fmt.Errorf("get: %w", apiErr(t, st.Err()))} {
			if k := resilience.Classify(err); k != resilience.Fatal {
				t.Errorf("%q %s: %v, want FATAL", tc.msg, name, k)
			}
			if a := resilience.IsProviderAnswer(err); a != tc.answer {
				t.Errorf("%q %s: answer %v, want %v", tc.msg, name, a, tc.answer)
			}
			if retryable(err) {
				t.Errorf("%q %s: retried, want not: the same message every time", tc.msg, name)
			}
		}
	}
	// Only grpc-go's texts, whole, as it formats them: a service's own
	// ResourceExhausted that reads like one, or starts like one and goes
	// on, is the service's throttle.
	for _, msg := range []string{
		"Quota exceeded for quota metric 'List Assets requests'",
		"upstream: received message larger than max", // not grpc-go's own: a relayed text
		"grpc: received message larger than max request rate of the project; retry later",
		"grpc: received message larger than max (4194305 vs. 4194304); upstream throttled, retry later",
		"trying to send message larger than max (quota 'Publish bytes per minute' exceeded)",
		"trying to send message larger than max (4194305 vs. 4194304) after 3 attempts",
		"grpc: message too large (rate limited: retry later)",
		"grpc: received message after decompression larger than max quota",
		"grpc: message after decompression larger than max (4194305 vs. )",
		"grpc: trying to send message larger than max requests per minute",
	} {
		err := status.Error(codes.ResourceExhausted, msg)
		if k := resilience.Classify(err); k != resilience.Throttled {
			t.Errorf("%q: %v, want THROTTLED", msg, k)
		}
		if !retryable(err) {
			t.Errorf("%q: not retried, want a throttle's retry", msg)
		}
	}
}

// The same with grpc-go itself: a client whose receive limit is 8 bytes
// gets a feed larger than that; the call, with the Retry option, is sent
// once and fails FATAL with grpc-go's ResourceExhausted, recorded as no
// throttle.
func TestAMessageOverTheSizeLimitIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(0)
		gov := newGov(t, resilience.Config{})
		client := startBuf(t, srv, ClientOption(WithGovernor(gov)))
		ctx, stats := resilience.WithStats(context.Background())
		_, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed},
			Retry(ctx, feedScope(), WithGovernor(gov)), gax.WithGRPCOptions(grpc.MaxCallRecvMsgSize(8)))
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("err %v, want grpc's ResourceExhausted for the size limit", err)
		}
		if k := resilience.Classify(err); k != resilience.Fatal {
			t.Errorf("Classify(%v) = %v, want FATAL", err, k)
		}
		if n := len(srv.reqs("GetFeed")); n != 1 {
			t.Errorf("%d attempts, want 1: a retry gets the same message", n)
		}
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.Throttled != 0 || sc.Retries != 0 {
			t.Errorf("stats %+v, want no throttle, no retry", sc)
		}
	})
}
