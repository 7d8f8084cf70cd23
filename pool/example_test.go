package pool_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cloudg/cloudg/pool"
	"github.com/cloudg/cloudg/resilience"
)

// fastGovernor paces EC2 far above what the examples send, so that they
// do not wait for tokens.
func fastGovernor() *resilience.Governor {
	gov, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{
		Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1000, Burst: 1000}},
	}})
	if err != nil {
		panic(err)
	}
	return gov
}

// A scan that fans out: a task per region lists the region's instances,
// and submits a task per instance for its detail call. Each task declares
// the scope of its first governed call; the pool gives a worker only a
// task whose scope can go now.
func Example() {
	gov := fastGovernor()
	scopeOf := func(region, op string) resilience.Scope {
		return resilience.Scope{Provider: "aws", Account: "123456789012", Region: region, Service: "ec2", Operation: op}
	}
	inventory := map[string][]string{
		"eu-west-1": {"i-0a", "i-0b"},
		"us-east-1": {"i-1a", "i-1b", "i-1c"},
	}

	ctx, ledger := resilience.WithLedger(context.Background(), "ec2 instances")
	p, ctx := pool.New(ctx, pool.Workers(4), pool.WithGovernor(gov))
	var mu sync.Mutex
	var described []string
	for region := range inventory {
		p.Go(ctx, scopeOf(region, "DescribeInstances"), func(ctx context.Context) error {
			ids, err := resilience.Call(ctx, scopeOf(region, "DescribeInstances"), func(context.Context) ([]string, error) {
				return inventory[region], nil // the SDK call
			}, resilience.WithGovernor(gov))
			if err != nil {
				return err
			}
			for _, id := range ids {
				p.Go(ctx, scopeOf(region, "DescribeInstanceAttribute"), func(ctx context.Context) error {
					return resilience.Do(ctx, scopeOf(region, "DescribeInstanceAttribute"), func(context.Context) error {
						mu.Lock()
						defer mu.Unlock()
						described = append(described, id)
						return nil
					}, resilience.WithGovernor(gov))
				})
			}
			return nil
		})
	}
	err := p.Wait()
	slices.Sort(described)
	fmt.Println(described, err)
	fmt.Println("partial:", ledger.Degraded())
	fmt.Println(p.Progress())
	// Output:
	// [i-0a i-0b i-1a i-1b i-1c] <nil>
	// partial: false
	// done 7/7, running 0, queued 0, ETA 0s
}

// Wait returns every task's error, joined; a task that panicked is one of
// them, as a *PanicError, and the other tasks run on.
func ExamplePool_Wait() {
	gov := fastGovernor()
	scope := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "eu-west-1", Service: "ec2", Operation: "DescribeVpcs"}

	p, ctx := pool.New(context.Background(), pool.Workers(2), pool.WithGovernor(gov))
	for i := range 3 {
		p.Go(ctx, scope, func(ctx context.Context) error {
			return resilience.Do(ctx, scope, func(context.Context) error {
				switch i {
				case 1:
					return errors.New("AccessDenied: not authorized")
				case 2:
					panic("a bug in the task")
				}
				return nil
			}, resilience.WithGovernor(gov))
		})
	}
	err := p.Wait()
	var pe *pool.PanicError
	fmt.Println(errors.As(err, &pe), pe.Value)
	pr := p.Progress()
	fmt.Println(pr.Done, "done,", pr.Failed, "failed")
	// Output:
	// true a bug in the task
	// 1 done, 2 failed
}
