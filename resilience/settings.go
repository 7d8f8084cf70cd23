package resilience

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cloudg/cloudg/internal/budget"
	"github.com/cloudg/cloudg/state"
)

// Built-in defaults. They are the values of cloudg's Python version; the
// README's configuration reference lists them.
const (
	defaultBreakerThreshold   = 5
	defaultBreakerCooldown    = 60 * time.Second
	defaultBreakerMaxCooldown = 600 * time.Second
	defaultMaxRetries         = 8
	defaultBaseDelay          = 500 * time.Millisecond
	defaultMaxBackoff         = 60 * time.Second
	defaultDeadline           = 900 * time.Second
	defaultRetryBudget        = 500
	// defaultBreakerDead is how long a scope may answer nothing but
	// throttling or transient errors before its breaker opens. It is far
	// above the second a congestion event lasts and the few seconds AIMD
	// takes to find a limit, where successes come back, and far below the
	// minutes a dead scope's calls take to spend their retries.
	defaultBreakerDead = 10 * time.Second
)

type serviceDefault struct {
	rate, burst float64
	perOp       bool
}

type providerDefault struct {
	rate, burst, floor float64
	accountRate        float64 // 0: off
	accountBurst       float64
	concurrency        int
	services           map[string]serviceDefault // keys "svc" or "svc.Operation"
}

var providerDefaults = map[string]providerDefault{
	"aws": {
		rate: 20, burst: 40, floor: 0.2, concurrency: 128,
		services: map[string]serviceDefault{
			"ec2":                      {20, 100, true},
			"iam":                      {10, 40, false},
			"sts":                      {50, 100, false},
			"organizations":            {5, 10, false},
			"controltower":             {2, 5, false},
			"route53":                  {5, 5, false},
			"resourcegroupstaggingapi": {5, 10, false},
			"cloudcontrol":             {5, 10, false},
			"cloudformation":           {5, 10, false},
			"lambda":                   {15, 15, false},
		},
	},
	"azure": {
		rate: 15, burst: 100, floor: 0.1, accountRate: 20, accountBurst: 200, concurrency: 16,
		services: map[string]serviceDefault{
			"network":       {30, 200, false},
			"storage":       {0.33, 20, false},
			"resourcegraph": {3, 15, false},
		},
	},
	"gcp": {
		rate: 10, burst: 20, floor: 0.05, concurrency: 16,
		services: map[string]serviceDefault{
			"cloudasset.ListAssets":           {1.5, 10, false},
			"cloudasset.SearchAllResources":   {6, 20, false},
			"cloudasset.SearchAllIamPolicies": {6, 20, false},
		},
	},
	// GitHub's scopes (package cloudghttp's GitHub) run at the generic
	// defaults, rest included, as any provider the configuration has no
	// settings for runs; the services whose limit GitHub documents as the same for
	// every authenticated token have it built in, rounded down, each with
	// a burst that keeps GitHub's window within it: "REST API endpoints
	// for search" (30 requests a minute, authenticated; 10 for code
	// search, which requires authentication; 10 for any search
	// unauthenticated, which the x-ratelimit-* headers then hold to).
	// core's and graphql's quotas depend on the token (5,000 to 15,000
	// requests, 1,000 to 15,000 points an hour, a query one point or
	// more: "Rate limits and query limits for the GraphQL API"), which
	// GitHub's headers tell and cloudghttp paces by.
	"github": {
		rate: 20, burst: 40, floor: 0.2, concurrency: 64,
		services: map[string]serviceDefault{
			"search":      {0.5, 1, false},   // 30 a minute
			"code_search": {0.166, 1, false}, // 10 a minute
		},
	},
}

// genericDefault is the default of any provider other than aws, azure,
// gcp and github.
var genericDefault = providerDefault{rate: 20, burst: 40, floor: 0.2, concurrency: 64}

// opKey names an operation override.
type opKey struct{ service, operation string }

// leafSpec is a leaf bucket's settings.
type leafSpec struct {
	spec  state.BucketSpec
	perOp bool // services only: every operation gets its own leaf
}

// providerSettings is a provider's resolved configuration: defaults merged
// with the user's settings. It is immutable once built and comparable with
// equal(), which is what makes Configure idempotent per provider.
type providerSettings struct {
	name     string
	enabled  bool
	leaf     state.BucketSpec
	services map[string]leafSpec
	ops      map[opKey]state.BucketSpec
	perOp    []string // the per-operation services, for leafKey
	allOps   bool     // every service is per operation but those of wholeSvc
	wholeSvc []string // with allOps: the services the user keeps whole, sorted (bucketsEqual compares them)
	opList   []opKey  // the keys of ops when they are few, for leafKey
	global   *state.BucketSpec
	account  *state.BucketSpec
	bulkhead int
	breaker  state.BreakerSpec
	retry    retryLimits
	budget   int // the retry budget's size, in tokens, at most budget.MaxSize
	// breakerWait makes a call wait for the breaker's verdict, within its
	// deadline, instead of failing at once.
	breakerWait bool
	// dead is how long a scope may answer only with failures before its
	// breaker opens; 0: never for that alone.
	dead time.Duration
}

func resolveProvider(name string, pc ProviderConfig, globalEnabled bool) *providerSettings {
	d, ok := providerDefaults[name]
	if !ok {
		d = genericDefault
	}
	adaptive := pc.Adaptive == nil || *pc.Adaptive
	goodput := adaptive && pc.Controller == controllerGoodput
	fl := floors{set: pc.MinRPS, def: d.floor, share: d.floor / d.rate, least: slowestRate(positiveOr(pc.DeadlineSeconds, defaultDeadline.Seconds()))}
	s := &providerSettings{
		name:    name,
		enabled: globalEnabled && (pc.Enabled == nil || *pc.Enabled),
		leaf: state.BucketSpec{
			Rate:     positiveOr(pc.MaxRPS, d.rate),
			Burst:    positiveOr(pc.Burst, d.burst),
			Floor:    fl.of(0, positiveOr(pc.MaxRPS, d.rate)),
			Adaptive: adaptive,
			Goodput:  goodput,
		},
		services: map[string]leafSpec{},
		ops:      map[opKey]state.BucketSpec{},
		bulkhead: positiveOr(pc.MaxConcurrency, d.concurrency),
		breaker: state.BreakerSpec{
			Threshold:   positiveOr(pc.BreakerThreshold, defaultBreakerThreshold),
			Cooldown:    orSeconds(pc.BreakerCooldownSeconds, defaultBreakerCooldown),
			MaxCooldown: orSeconds(pc.BreakerMaxCooldownSeconds, defaultBreakerMaxCooldown),
		},
		retry: retryLimits{
			// max_retries and the first attempt, without wrapping a huge
			// max_retries (math.MaxInt, set in code) negative.
			attempts:   derefOr(pc.MaxAttempts, min(derefOr(pc.MaxRetries, defaultMaxRetries), math.MaxInt-1)+1),
			base:       orSeconds(pc.BaseDelaySeconds, defaultBaseDelay),
			maxBackoff: orSeconds(pc.MaxBackoffSeconds, defaultMaxBackoff),
			deadline:   orSeconds(pc.DeadlineSeconds, defaultDeadline),
			useBudget:  true,
			transient:  true,
		},
		// A size past what a budget holds saturates here, where every
		// read of it (Budget, Inspect, the reclaimer's test of a full
		// budget) finds it, as it does in the budget the store makes.
		budget:      int(min(int64(derefOr(pc.RetryBudget, defaultRetryBudget)), budget.MaxSize)),
		breakerWait: pc.BreakerWait,
		dead:        defaultBreakerDead,
	}
	if pc.BreakerDeadSeconds != nil {
		s.dead = orSeconds(*pc.BreakerDeadSeconds, 0)
	}
	if r := derefOr(pc.GlobalMaxRPS, 0); r > 0 {
		s.global = &state.BucketSpec{Rate: r, Burst: pc.GlobalBurst}
	}
	if r := derefOr(pc.AccountMaxRPS, d.accountRate); r > 0 {
		burst := pc.AccountBurst
		if burst == 0 && pc.AccountMaxRPS == nil {
			burst = d.accountBurst
		}
		s.account = &state.BucketSpec{Rate: r, Burst: burst}
	}
	merged := map[string]ServiceConfig{}
	for k, v := range d.services {
		perOp := v.perOp
		merged[k] = ServiceConfig{MaxRPS: v.rate, Burst: v.burst, PerOperation: &perOp}
	}
	for k, v := range pc.Services {
		cur, found := merged[k]
		if !found {
			merged[k] = v
			continue
		}
		if v.MaxRPS > 0 {
			cur.MaxRPS = v.MaxRPS
			if v.Burst == 0 {
				cur.Burst = 0 // a new rate without a burst: twice the rate
			}
		}
		if v.Burst > 0 {
			cur.Burst = v.Burst
		}
		if v.MinRPS > 0 {
			cur.MinRPS = v.MinRPS
		}
		if v.PerOperation != nil {
			cur.PerOperation = v.PerOperation
		}
		merged[k] = cur
	}
	if pc.PerOperation != nil && *pc.PerOperation {
		s.allOps = true
		for k, v := range merged {
			if _, _, isOp := strings.Cut(k, "."); isOp {
				continue
			}
			if user, ok := pc.Services[k]; ok && user.PerOperation != nil && !*user.PerOperation {
				s.wholeSvc = append(s.wholeSvc, k)
				continue
			}
			on := true
			v.PerOperation = &on
			merged[k] = v
		}
		// Sorted: the map gives them in any order, and the same settings
		// must compare equal (bucketsEqual), or re-applying them would
		// rebuild every bucket and forget what was learned.
		slices.Sort(s.wholeSvc)
	}
	for k, v := range merged {
		if _, _, isOp := strings.Cut(k, "."); isOp {
			continue
		}
		s.services[k] = leafSpec{spec: s.serviceSpec(v, fl, adaptive, goodput), perOp: v.PerOperation != nil && *v.PerOperation}
	}
	for k, v := range merged {
		svc, op, isOp := strings.Cut(k, ".")
		if !isOp {
			continue
		}
		// An operation starts from its service's settings (built in, then
		// the user's), and overrides what it sets.
		base, ok := merged[svc]
		if !ok {
			base = ServiceConfig{}
		}
		if v.MaxRPS > 0 {
			base.MaxRPS = v.MaxRPS
			base.Burst = v.Burst // a new rate without a burst: twice the rate
		}
		if v.Burst > 0 {
			base.Burst = v.Burst
		}
		if v.MinRPS > 0 {
			base.MinRPS = v.MinRPS
		}
		s.ops[opKey{svc, op}] = s.serviceSpec(base, fl, adaptive, goodput)
	}
	s.indexLeafKeys()
	return s
}

// serviceSpec is the bucket of a service (or operation) entry: zero fields
// take the provider's leaf, but for the floor, which fl gives.
func (s *providerSettings) serviceSpec(v ServiceConfig, fl floors, adaptive, goodput bool) state.BucketSpec {
	spec := state.BucketSpec{
		Rate:     positiveOr(v.MaxRPS, s.leaf.Rate),
		Burst:    v.Burst,
		Adaptive: adaptive,
		Goodput:  goodput,
	}
	spec.Floor = fl.of(v.MinRPS, spec.Rate)
	if v.MaxRPS == 0 && v.Burst == 0 {
		spec.Burst = s.leaf.Burst
	}
	return spec
}

// floors resolves the floor of the adaptive rate (min_rps) of a leaf: its
// own min_rps, else the provider's (set), else the provider's default
// (def). A leaf whose ceiling is below the default floor, where min_rps is
// unset, has a floor as far below its ceiling as the default floor is below
// the provider's default max_rps (share: 0.2 of 20, 1%), so that a max_rps
// under the default floor (15 requests an hour is 0.0042 rps) needs no
// min_rps beside it, and a throttle still slows it. Where min_rps is unset,
// the floor is no lower than least, the slowest rate Config.Validate lets
// a min_rps be (slowestRate of deadline_seconds: 0.00112 rps for 900 s),
// so that a throttle slows no leaf to a rate at which a call waiting for
// its token would be refused: a deadline_seconds of 3 raises aws's default
// floor, a token every 5 s, to 0.334 rps, as Config.Validate refuses a
// min_rps of 0.2 beside it. No floor is above its leaf's ceiling. A
// min_rps the user set is lowered only to a built-in ceiling above which
// it is set (aws: {min_rps: 6} over controltower's 2 rps), where it holds
// the leaf at that rate, a throttle not slowing it, as a min_rps equal to
// the rate does: Config.Validate refuses a ceiling the user set below it.
type floors struct{ set, def, share, least float64 }

// of returns the floor of a leaf whose own min_rps is own (0: unset) and
// whose ceiling is rate.
func (f floors) of(own, rate float64) float64 {
	switch {
	case own > 0:
		return min(own, rate)
	case f.set > 0:
		return min(f.set, rate)
	}
	floor := f.def
	if rate < f.def {
		floor = rate * f.share
	}
	return min(max(floor, f.least), rate)
}

// leafKey returns the scope of the leaf bucket (and breaker) for a call:
// the operation is kept where the service is per operation or has an
// override for it.
//
// It runs on every call, so it compares strings rather than hashing them:
// a provider has a handful of per-operation services and overrides.
func (s *providerSettings) leafKey(sc Scope) Scope {
	if sc.Operation == "" {
		return sc
	}
	for _, svc := range s.perOp {
		if svc == sc.Service {
			return sc
		}
	}
	if s.allOps && !slices.Contains(s.wholeSvc, sc.Service) {
		return sc
	}
	if s.opList != nil {
		for _, k := range s.opList {
			if k.service == sc.Service && k.operation == sc.Operation {
				return sc
			}
		}
	} else if len(s.ops) > 0 {
		if _, ok := s.ops[opKey{sc.Service, sc.Operation}]; ok {
			return sc
		}
	}
	sc.Operation = ""
	return sc
}

// maxOpList is the number of operation overrides leafKey scans in a
// slice; past it, it looks them up in the map.
const maxOpList = 16

// indexLeafKeys fills perOp and opList from services and ops.
func (s *providerSettings) indexLeafKeys() {
	for name, ls := range s.services {
		if ls.perOp {
			s.perOp = append(s.perOp, name)
		}
	}
	if len(s.ops) <= maxOpList {
		s.opList = make([]opKey, 0, len(s.ops))
		for k := range s.ops {
			s.opList = append(s.opList, k)
		}
	}
}

// leafSpec returns the bucket settings of a leaf key.
func (s *providerSettings) leafSpec(key Scope) state.BucketSpec {
	if key.Operation != "" {
		if sp, ok := s.ops[opKey{key.Service, key.Operation}]; ok {
			return sp
		}
	}
	if ls, ok := s.services[key.Service]; ok {
		return ls.spec
	}
	return s.leaf
}

// limitsEqual reports whether two settings have the same buckets, breakers
// and bulkheads (everything but the retry settings), and govern alike.
func (s *providerSettings) limitsEqual(o *providerSettings) bool {
	return s.enabled == o.enabled && s.bulkhead == o.bulkhead && s.breaker == o.breaker && s.bucketsEqual(o)
}

// bucketsEqual reports whether two settings make the same buckets.
func (s *providerSettings) bucketsEqual(o *providerSettings) bool {
	if s.leaf != o.leaf || !specPtrEqual(s.global, o.global) || !specPtrEqual(s.account, o.account) ||
		len(s.services) != len(o.services) || len(s.ops) != len(o.ops) ||
		s.allOps != o.allOps || !slices.Equal(s.wholeSvc, o.wholeSvc) {
		return false
	}
	for k, v := range s.services {
		if w, ok := o.services[k]; !ok || w != v {
			return false
		}
	}
	for k, v := range s.ops {
		if w, ok := o.ops[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func specPtrEqual(a, b *state.BucketSpec) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// positiveOr returns v when it is set (> 0), else d.
func positiveOr[T int | float64](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

// derefOr returns *v when v is set, else d.
func derefOr[T any](v *T, d T) T {
	if v != nil {
		return *v
	}
	return d
}

// orSeconds converts v seconds to a Duration when it is set (> 0), else
// is d. A setting below a nanosecond is one, not zero, which would mean
// something else (no backoff that could grow, or no dead-scope rule).
func orSeconds(v float64, d time.Duration) time.Duration {
	if v > 0 {
		return max(clampDuration(v*float64(time.Second)), 1)
	}
	return d
}

// clampDuration converts ns, in nanoseconds, to a Duration within
// maxDuration either way: a float64 out of a Duration's range has no
// defined conversion.
func clampDuration(ns float64) time.Duration {
	switch {
	case ns >= float64(maxDuration):
		return maxDuration
	case ns <= -float64(maxDuration):
		return -maxDuration
	}
	return time.Duration(ns)
}
