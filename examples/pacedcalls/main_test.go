package main

import (
	"bytes"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/resilience"
)

// TestOutputMatchesTheSpec runs the example in virtual time and compares
// its output with the original worked example's (its figures; Go prints
// its own notation for the result and the totals).
func TestOutputMatchesTheSpec(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer resilience.SetDefault(nil)
		var out bytes.Buffer
		if err := run(&out); err != nil {
			t.Fatal(err)
		}
		want := `[{VpcID:vpc-0a1b2c3d}] after 3 attempts
6 secrets in 2.0s at 2 rps
  aws/123456789012/eu-west-1/ec2: throttled 2x, slowed to 5.0 rps, 2 retries
  aws/123456789012/eu-west-1/secretsmanager: waited 5.0s for rate limit
totals: {calls: 9, throttled: 2, transient_errors: 0, retries: 2, gave_up: 0, rejected: 0, breaker_trips: 0, wait_seconds: 5.000}
slowed: aws/123456789012/eu-west-1/ec2/DescribeVpcs: 5.0 rps
`
		if out.String() != want {
			t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
		}
	})
}
