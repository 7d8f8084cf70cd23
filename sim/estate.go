package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// The estate scenarios: a scan of several accounts x regions x services,
// each service with a listing that pages through its resources and a
// detail call per resource, run by a scheduler over a fixed number of
// workers, each call governed (or retried by the AWS SDK's adaptive mode).

// Built-in estate scenarios: one estate, four variants.
const (
	ScenarioEstateUniform = "estate-uniform" // the estate's per-action limits, steady
	ScenarioEstatePaused  = "estate-paused"  // one scope answers Retry-After: 60 from 5 s to 65 s
	ScenarioEstateDead    = "estate-dead"    // one detail operation of one account and region throttled for good
	ScenarioEstateTenant  = "estate-tenant"  // a second tenant takes a moving share of one account's detail limits
)

// The schedulers compared on an estate (EstateStrategyNames, in table
// order). Those "over Do" make every call with resilience.Do and a
// governor at its defaults (the AIMD controller).
const (
	// Plain is what a Go user writes: W workers taking tasks from one FIFO
	// queue (the listings first, then the detail calls in the order their
	// pages came), over Do.
	Plain = "plain"
	// PlainAdaptive is the same pool over the AWS SDK's adaptive retry
	// mode, no governor: one retryer per client (account x region x
	// service), shared by the calls of that client, as one SDK client
	// would be.
	PlainAdaptive = "plain-adaptive"
	// Shuffle is CloudQuery's shuffle strategy: the listings in a random
	// order drawn from the run's seed (CloudQuery fixes its seed by the
	// tables' names), and each listing's detail calls depth first, before
	// the listings still queued, as CloudQuery resolves a table's
	// relations inside it: the workers take the newest task first. Over
	// Do.
	Shuffle = "shuffle"
	// RandomQueue is CloudQuery's random queue: every worker takes a task
	// drawn at random from everything queued, the detail calls included
	// (seeded). Over Do.
	RandomQueue = "random-queue"
	// PoolAIMD is package pool (a FIFO queue per scope, workers given the
	// tasks whose scope can go now) over Do, the governor's defaults
	// (AIMD).
	PoolAIMD = "pool-aimd"
	// PoolGoodput is the same with controller: goodput.
	PoolGoodput = "pool-goodput"
	// PoolOracle is the pool over a governor told every scope's true limit
	// and burst, its rates fixed (adaptive: false): what the scheduling
	// alone gives, the reference that tells a controller's cost from the
	// scheduler's. It knows the provider's limits, not the tenant's share.
	PoolOracle = "pool-oracle"
)

// EstateStrategyNames lists the estate's strategies, in table order.
var EstateStrategyNames = []string{Plain, PlainAdaptive, Shuffle, RandomQueue, PoolAIMD, PoolGoodput, PoolOracle}

// oracleConfig returns the governor configuration of PoolOracle: every
// operation its own leaf at the provider's limit and burst, not adaptive.
func (e *Estate) oracleConfig(base resilience.Config) resilience.Config {
	cfg := base
	off := false
	cfg.AWS.Adaptive = &off
	perOp := true
	cfg.AWS.PerOperation = &perOp
	cfg.AWS.Services = map[string]resilience.ServiceConfig{}
	for _, svc := range e.Services {
		cfg.AWS.Services[svc.Name+"."+svc.List] = resilience.ServiceConfig{MaxRPS: svc.ListRate, Burst: max(1, BurstSeconds*svc.ListRate)}
		cfg.AWS.Services[svc.Name+"."+svc.Detail] = resilience.ServiceConfig{MaxRPS: svc.DetailRate, Burst: max(1, BurstSeconds*svc.DetailRate)}
	}
	return cfg
}

// Estate is the shape of a scan: for every account, region and service, a
// listing task that fetches the service's pages one after another and, for
// every item of a page, submits a detail task. Every (account, region,
// service, operation) is a scope of the provider, throttled by its own
// bucket at the operation's limit. The zero Estate has no account, region
// or service: a scan of nothing. A Run only reads a scenario's Estate, so
// Runs on several goroutines may read one at once, as long as nothing
// changes it meanwhile.
type Estate struct {
	Accounts []string
	Regions  []string
	Services []EstateService
	// Sizes scales the items of each (account, region), account-major
	// (the first account's regions first); 1 where it is missing.
	Sizes []float64
	// Affected is the key (EstateKey) of the scope the variant pauses or
	// kills, "" for none: the figures of the unaffected scopes leave it
	// out.
	Affected string
}

// EstateService is a service of an estate: its listing operation, paged,
// and its detail operation, one call per item, each with the provider's
// limit (rps; the burst is BurstSeconds of it). Like its Estate, it is a
// plain value that several goroutines may read at once while none changes
// it. The zero EstateService lists one empty page (a PageSize of 0 is 1)
// of an unnamed operation whose limit is 0 rps, with a burst of one
// token: set every field.
type EstateService struct {
	Name       string
	List       string
	ListRate   float64
	PageSize   int
	Detail     string
	DetailRate float64
	// Items is the number of resources per (account, region) at size 1.
	Items int
}

// BurstSeconds is the provider's burst of an estate's buckets, in seconds
// of refill (an EC2 describe action's is 100 for 20 rps: 5 s).
const BurstSeconds = 5

// EstateKey is the key of one scope of an estate, its provider bucket and
// its action in a Result: "account/region/service/operation".
func EstateKey(account, region, service, operation string) string {
	return account + "/" + region + "/" + service + "/" + operation
}

// scopeOfKey returns the governor scope of an estate key.
func scopeOfKey(key string) (resilience.Scope, bool) {
	p := strings.Split(key, "/")
	if len(p) != 4 {
		return resilience.Scope{}, false
	}
	return resilience.Scope{Provider: "aws", Account: p[0], Region: p[1], Service: p[2], Operation: p[3]}, true
}

// listing is one listing task of an estate and the detail tasks it makes.
type listing struct {
	key, detail        string // the scopes' keys
	scope, detailScope resilience.Scope
	pageSize, pages    int
	items              int
	id0                int // the call index of its first page; its items follow its pages
}

// listings returns the estate's listings, in order: accounts, then
// regions, then services.
func (e *Estate) listings() []listing {
	var out []listing
	id := 0
	for a, acct := range e.Accounts {
		for r, region := range e.Regions {
			size := 1.0
			if i := a*len(e.Regions) + r; i < len(e.Sizes) {
				size = e.Sizes[i]
			}
			for _, svc := range e.Services {
				l := listing{
					key:      EstateKey(acct, region, svc.Name, svc.List),
					detail:   EstateKey(acct, region, svc.Name, svc.Detail),
					pageSize: max(1, svc.PageSize),
					items:    int(float64(svc.Items)*size + 0.5),
					id0:      id,
				}
				l.scope, _ = scopeOfKey(l.key)
				l.detailScope, _ = scopeOfKey(l.detail)
				l.pages = max(1, (l.items+l.pageSize-1)/l.pageSize)
				id += l.pages + l.items
				out = append(out, l)
			}
		}
	}
	return out
}

// workPer returns the calls of each scope.
func (e *Estate) workPer() map[string]int {
	out := map[string]int{}
	for _, l := range e.listings() {
		out[l.key] += l.pages
		out[l.detail] += l.items
	}
	return out
}

// keys returns the estate's scope keys, in the order of its listings, each
// listing's scope before its detail scope.
func (e *Estate) keys() []string {
	var out []string
	for _, l := range e.listings() {
		out = append(out, l.key, l.detail)
	}
	return out
}

// limits returns the provider's limit of every scope.
func (e *Estate) limits() map[string]Limit {
	out := map[string]Limit{}
	for _, acct := range e.Accounts {
		for _, region := range e.Regions {
			for _, svc := range e.Services {
				out[EstateKey(acct, region, svc.Name, svc.List)] = Limit{Rate: svc.ListRate, Burst: max(1, BurstSeconds*svc.ListRate)}
				out[EstateKey(acct, region, svc.Name, svc.Detail)] = Limit{Rate: svc.DetailRate, Burst: max(1, BurstSeconds*svc.DetailRate)}
			}
		}
	}
	return out
}

// apply makes sc's workload and provider buckets the estate's.
func (e *Estate) apply(sc *Scenario) {
	sc.Estate = e
	sc.Workload.Actions = e.keys()
	n := 0
	for _, c := range e.workPer() {
		n += c
	}
	sc.Workload.Calls = n
	sc.Provider.Per = e.limits()
}

// summary describes the estate in one line.
func (e *Estate) summary(sc *Scenario) string {
	var b strings.Builder
	ls := e.listings()
	pages, items := 0, 0
	for _, l := range ls {
		pages += l.pages
		items += l.items
	}
	fmt.Fprintf(&b, "%d accounts x %d regions x %d services, %d scopes: %d listings (%d pages) and %d detail calls; %d workers; limits",
		len(e.Accounts), len(e.Regions), len(e.Services), 2*len(ls), len(ls), pages, items, sc.Workload.Workers)
	for i, s := range e.Services {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s %s %g rps (pages of %d) -> %s %g rps (%d items)", s.Name, s.List, s.ListRate, s.PageSize, s.Detail, s.DetailRate, s.Items)
	}
	fmt.Fprintf(&b, "; burst %d s of refill; sizes %v", BurstSeconds, e.Sizes)
	p := sc.Provider
	p.describeStops(&b, "; ")
	if t := p.Tenant; t != nil {
		b.WriteString("; " + t.describe())
	}
	fmt.Fprintf(&b, "; latency %s median, %s p99", secs(p.LatencyMedian), secs(p.LatencyP99))
	return b.String()
}

// describeStops writes what the provider pauses and throttles for good,
// each after sep.
func (p *ProviderSpec) describeStops(b *strings.Builder, sep string) {
	for _, w := range p.Pauses {
		if w.AtFirst {
			fmt.Fprintf(b, "%s%s paused for %s from its first request (Retry-After)", sep, w.Action, secs(w.To-w.From))
		} else {
			fmt.Fprintf(b, "%s%s paused %s-%s (Retry-After)", sep, w.Action, secs(w.From), secs(w.To))
		}
	}
	for _, d := range p.Dead {
		fmt.Fprintf(b, "%s%s throttled for good", sep, d)
	}
}

// describe says what the tenant takes.
func (t *Tenant) describe() string {
	var b strings.Builder
	b.WriteString("a tenant taking ")
	if w := t.Walk; w != nil {
		b.WriteString("a moving level (random walk from ")
		fmt.Fprintf(&b, "%g, steps of up to %g every %s, between 0 and 1) of ", w.Start, w.Step, secs(w.Every))
	}
	if t.Share > 0 {
		fmt.Fprintf(&b, "%g%% of the limit", 100*t.Share)
	} else {
		fmt.Fprintf(&b, "%g rps", t.Rate)
	}
	switch n := len(t.Actions); {
	case t.Action == "" && n == 0:
	case n == 0:
		b.WriteString(" of " + t.Action)
	default:
		fmt.Fprintf(&b, " of %d scopes", n+min(1, len(t.Action)))
	}
	if t.From > 0 || t.Until > 0 {
		fmt.Fprintf(&b, " from %s", secs(t.From))
		if t.Until > 0 {
			fmt.Fprintf(&b, " until %s", secs(t.Until))
		}
	}
	return b.String()
}

// The estate: four accounts, two regions, three services whose listings
// and detail operations have limits from 1 to 20 rps. The first account's
// first region is the largest; its three detail scopes each hold 60 s of
// work at their limits, and set the ideal makespan; the other account and
// region pairs hold from 0.3 to 0.8 of it.
func estate() *Estate {
	return &Estate{
		Accounts: []string{"111111111111", "222222222222", "333333333333", "444444444444"},
		Regions:  []string{"us-east-1", "eu-west-1"},
		Services: []EstateService{
			{Name: "ec2", List: "DescribeInstances", ListRate: 20, PageSize: 50, Detail: "DescribeInstanceAttribute", DetailRate: 5, Items: 300},
			{Name: "rds", List: "DescribeDBInstances", ListRate: 10, PageSize: 20, Detail: "ListTagsForResource", DetailRate: 2, Items: 120},
			{Name: "lambda", List: "ListFunctions", ListRate: 4, PageSize: 20, Detail: "GetFunctionConcurrency", DetailRate: 1, Items: 60},
		},
		Sizes: []float64{1, 0.6, 0.8, 0.5, 0.7, 0.4, 0.5, 0.3},
	}
}

// estateScenario is the estate with its provider and clients: 16 workers;
// EC2-like answers (no Retry-After on a throttle) with 50 ms median
// latency; the governor at its defaults but with a leaf per operation for
// every service (per_operation: true; ec2 has it built in), so that each
// scope the provider throttles has its own.
func estateScenario(name, desc string) *Scenario {
	s := base()
	s.Name, s.Description = name, desc
	s.Workload.Workers = 16
	s.Provider.Service = "ec2" // the scopes' keys name their own
	perOp := true
	s.Governor = resilience.Config{AWS: resilience.ProviderConfig{PerOperation: &perOp}}
	estate().apply(s)
	return s
}

func estateUniformScenario() *Scenario {
	return estateScenario(ScenarioEstateUniform,
		"a scan of 4 accounts x 2 regions x 3 services with 16 workers: listings that page, a detail call per item; per-action limits from 1 to 20 rps, steady")
}

// The paused scope: the second account's ec2 detail calls in eu-west-1
// (150 calls at 5 rps), paused for 60 s from the first request the scan
// makes of it (its quota was spent when the scan met it).
func estatePausedScenario() *Scenario {
	s := estateScenario(ScenarioEstatePaused,
		"the estate with one scope paused: every request of 222222222222/eu-west-1 ec2 DescribeInstanceAttribute for 60 s from the first is throttled with Retry-After (60 s at first)")
	key := EstateKey("222222222222", "eu-west-1", "ec2", "DescribeInstanceAttribute")
	s.Provider.Pauses = []Pause{{Action: key, To: 60 * time.Second, AtFirst: true}}
	s.Estate.Affected = key
	return s
}

// The dead operation: the first account's rds detail calls in eu-west-1
// (72 calls), throttled for good.
func estateDeadScenario() *Scenario {
	s := estateScenario(ScenarioEstateDead,
		"the estate with one operation throttled for good: 111111111111/eu-west-1 rds ListTagsForResource (its 72 calls cannot succeed)")
	key := EstateKey("111111111111", "eu-west-1", "rds", "ListTagsForResource")
	s.Provider.Dead = []string{key}
	s.Estate.Affected = key
	return s
}

// The tenant: another tool scanning the first account takes a moving share
// of its detail scopes' limits, up to 75% (a level between 0 and 1 that
// starts at 0.5 and moves by up to 0.25 every 10 s, drawn from the seed).
func estateTenantScenario() *Scenario {
	s := estateScenario(ScenarioEstateTenant,
		"the estate with a second tenant on the first account's detail scopes, taking a share of their limits that moves every 10 s (random walk between 0% and 75%, seeded)")
	var keys []string
	for _, l := range s.Estate.listings() {
		if l.scope.Account == s.Estate.Accounts[0] {
			keys = append(keys, l.detail)
		}
	}
	s.Provider.Tenant = &Tenant{Share: 0.75, Actions: keys, Walk: &Walk{Every: 10 * time.Second, Step: 0.25, Start: 0.5}}
	return s
}
