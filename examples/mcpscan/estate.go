package main

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// estate is a fake cloud: what each region's services hold, answered after
// a latency, with one throttle on the first listing of one service so that
// the governor has something to do. It counts the attempts it answers, so
// a test can tell that a tool called no cloud.
type estate struct {
	regions   []string
	services  map[string]int // resources per region
	latency   time.Duration
	throttled string // region/service whose first attempt is throttled
	panics    string // region/service whose listing panics, as a collector's bug would ("": none)
	attempts  atomic.Int64
	once      atomic.Bool
}

func newEstate() *estate {
	return &estate{
		regions:   []string{"eu-west-1", "us-east-1"},
		services:  map[string]int{"ec2": 12, "iam": 5, "s3": 7},
		latency:   250 * time.Millisecond,
		throttled: "eu-west-1/ec2",
	}
}

// throttleError is shaped like an SDK's API error: the governor reads its
// code and status through ErrorCode and HTTPStatusCode.
type throttleError struct{}

func (throttleError) Error() string       { return "Throttling: Rate exceeded" }
func (throttleError) ErrorCode() string   { return "Throttling" }
func (throttleError) HTTPStatusCode() int { return 400 }

// list answers one listing of a service in a region.
func (e *estate) list(ctx context.Context, region, service string) (int, error) {
	e.attempts.Add(1)
	t := time.NewTimer(e.latency)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if region+"/"+service == e.panics {
		panic(fmt.Sprintf("no lister for %s/%s", region, service))
	}
	if region+"/"+service == e.throttled && e.once.CompareAndSwap(false, true) {
		return 0, throttleError{}
	}
	return e.services[service], nil
}

// Dataset is what a scan collected from one scope.
type Dataset struct {
	Scope       string         `json:"scope"`
	CollectedAt time.Time      `json:"collected_at"`
	Resources   map[string]int `json:"resources" jsonschema:"resources per region/service"`
	Total       int            `json:"total"`
	Calls       int64          `json:"calls" jsonschema:"API calls the governor counted"`
	Throttled   int64          `json:"throttled"`
	Retries     int64          `json:"retries"`
	Messages    []string       `json:"messages,omitempty" jsonschema:"the governor's line per eventful scope"`
}

// walk collects one account: every region's services, each listing a
// governed call, in the governor's shared limits.
func (e *estate) walk(ctx context.Context, gov *resilience.Governor, provider, account string) (*Dataset, error) {
	ctx, stats := resilience.WithStats(ctx)
	d := &Dataset{Scope: provider + "/" + account, Resources: map[string]int{}}
	services := make([]string, 0, len(e.services))
	for s := range e.services {
		services = append(services, s)
	}
	sort.Strings(services)
	for _, region := range e.regions {
		for _, service := range services {
			scope := resilience.Scope{Provider: provider, Account: account, Region: region, Service: service}
			n, err := resilience.Call(ctx, scope, func(ctx context.Context) (int, error) {
				return e.list(ctx, region, service)
			}, resilience.WithGovernor(gov))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", scope, err)
			}
			d.Resources[region+"/"+service] = n
			d.Total += n
		}
	}
	sum := gov.Summary(stats)
	d.CollectedAt = time.Now().UTC()
	d.Calls, d.Throttled, d.Retries = sum.Totals.Calls, sum.Totals.Throttled, sum.Totals.Retries
	d.Messages = sum.Messages
	return d, nil
}
