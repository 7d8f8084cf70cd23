package fleet_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
)

// A fleet's processes share their governor's state on Redis. When Redis
// does not answer (here nothing listens at the address), no call fails:
// the process goes on at local limits until Redis answers.
func ExampleOpen() {
	store, err := fleet.Open("redis://127.0.0.1:1/0", // in production: rediss://user:pass@redis:6379/0
		fleet.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		fmt.Println(err) // only a malformed URL
		return
	}
	defer store.Close()
	gov, _ := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(store))

	vpcs := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
	err = resilience.Do(context.Background(), vpcs, func(context.Context) error { return nil }, resilience.WithGovernor(gov))
	fmt.Println("call:", err)
	fmt.Println("local limits:", store.Stats().Degraded)
	// Output:
	// call: <nil>
	// local limits: true
}
