package test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go/middleware"
	"github.com/cloudg/cloudg/resilience"
)

// After a cut of the SDK's backoff sleep, a retry the governor lets
// through after all (here the governor was reset as the breaker opened,
// so the breaker that made the cut is gone) is sent on the call's own
// context, live again: the cut one is done for good. The cut comes before
// the attempt's check of the context, which ends the SDK's loop and sends
// the retry from a loop of its own, or after that check, just before the
// attempt is sent.
func TestARetryLetThroughAfterACutIsSent(t *testing.T) {
	for _, where := range []string{"before the attempt's check", "after the attempt's check"} {
		t.Run(where, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				// The call's first attempt and four calls of others
				// throttled open the breaker (a fifth is refused), then
				// the call's retry is answered.
				f.script("DescribeVpcs", ec2Throttle, ec2Throttle, ec2Throttle, ec2Throttle, ec2Throttle, ok)
				slow, g := governed(t, f, resilience.Config{}, slowRetryer(3))
				once, _ := governedWith(t, f, g)
				once.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
				others := ec2.NewFromConfig(once)
				done := false
				cutThenReset := func() {
					if done {
						return
					}
					done = true
					for range 5 {
						_ = describeVpcs(context.Background(), others) // the breaker opens
					}
					synctest.Wait() // the watch cancels the cut context
					g.Reset()
				}
				var opt func(*ec2.Options)
				if where == "before the attempt's check" {
					opt = func(o *ec2.Options) {
						o.TracerProvider = hookTracer{hook: func(_ context.Context, attempt any) {
							if attempt == 2 {
								cutThenReset()
							}
						}}
					}
				} else {
					attempts := 0
					hook := middleware.FinalizeMiddlewareFunc("cutThenReset", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
						if attempts++; attempts == 2 { // after the SDK's check of the context
							cutThenReset()
						}
						return next.HandleFinalize(ctx, in)
					})
					opt = func(o *ec2.Options) {
						o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
							return s.Finalize.Insert(hook, "cloudgaws.Attempt", middleware.Before)
						})
					}
				}
				err := describeVpcs(context.Background(), ec2.NewFromConfig(slow, opt))
				if err != nil || f.count("DescribeVpcs") != 6 {
					t.Errorf("the call ended with %v after %d requests; want the retry sent and answered, 6 requests", err, f.count("DescribeVpcs"))
				}
			})
		})
	}
}
