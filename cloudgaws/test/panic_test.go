package test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go/middleware"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// boom is the value the caller's code panics with: the caller must get
// this very value back.
var boom = &struct{ s string }{"boom"}

// panicClient is an aws.HTTPClient that panics.
type panicClient struct{}

func (panicClient) Do(*http.Request) (*http.Response, error) { panic(boom) }

// panicOnAttempt is a client option whose deserialize middleware, next to
// the transport, panics once the n-th attempt's answer is in.
func panicOnAttempt(n int32) func(*ec2.Options) {
	var attempts atomic.Int32
	return func(o *ec2.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("boom",
				func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
					middleware.DeserializeOutput, middleware.Metadata, error,
				) {
					out, md, err := next.HandleDeserialize(ctx, in)
					if attempts.Add(1) == n {
						panic(boom)
					}
					return out, md, err
				}), middleware.After)
		})
	}
}

// Code of the caller's that panics during a governed AWS call, over
// loopback TCP (the HTTP client under the SDK; a user middleware, on the
// first attempt and on a retry after a throttle), ends the call as lost
// to the panic, once, and the panic reaches the caller as it was: the
// slot held across the SDK's retries is given back (the next call, under
// a cap of one, goes at once), and the run's calls are the panicked one
// and the next one's success.
func TestPanicIsRecordedAndGoesOnOverTCP(t *testing.T) {
	cases := map[string]struct {
		script []reply
		client func(cfg aws.Config) *ec2.Client
	}{
		"HTTP client": {
			client: func(cfg aws.Config) *ec2.Client {
				cfg.HTTPClient = panicClient{}
				return ec2.NewFromConfig(cfg)
			},
		},
		"middleware": {
			client: func(cfg aws.Config) *ec2.Client { return ec2.NewFromConfig(cfg, panicOnAttempt(1)) },
		},
		"middleware on a retry": {
			script: []reply{ec2Throttle, ok},
			client: func(cfg aws.Config) *ec2.Client { return ec2.NewFromConfig(cfg, panicOnAttempt(2)) },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFake(t)
			if tc.script != nil {
				f.script("DescribeVpcs", tc.script...)
			}
			rc := fastEC2
			rc.AWS.MaxConcurrency = 1
			cfg, g := tcpGoverned(t, f, rc, cloudgaws.WithBaseRetryer(quickRetryer))
			ctx, stats := resilience.WithStats(context.Background())
			ctx, ledger := resilience.WithLedger(ctx, "vpcs")
			if r := func() (r any) {
				defer func() { r = recover() }()
				_ = describeVpcs(ctx, tc.client(cfg))
				return nil
			}(); r != boom {
				t.Fatalf("the caller got %v, want the panic's own value", r)
			}
			if n := freeSlots(g); n != 1 {
				t.Fatalf("%d free slots after the panic, want the cap's 1", n)
			}
			next, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := describeVpcs(next, ec2.NewFromConfig(cfg)); err != nil {
				t.Fatalf("the next call: %v", err)
			}
			lostOnly(t, g, stats, ledger, resilience.LossPanicked, 1)
			if tot := g.Summary(stats).Totals; tot.Calls != 2 {
				t.Errorf("%d calls counted, want 2: the panicked one and the next one", tot.Calls)
			}
		})
	}
}
