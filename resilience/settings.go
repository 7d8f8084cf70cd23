package resilience

import (
	"strings"
	"time"

	"github.com/cloudg/cloudg/internal/breaker"
	"github.com/cloudg/cloudg/internal/bucket"
)

// Built-in defaults. They are facts from the original system; the README's
// configuration reference lists them.
const (
	defaultBreakerThreshold   = 5
	defaultBreakerCooldown    = 60 * time.Second
	defaultBreakerMaxCooldown = 600 * time.Second
	defaultMaxRetries         = 8
	defaultBaseDelay          = 500 * time.Millisecond
	defaultMaxBackoff         = 60 * time.Second
	defaultDeadline           = 900 * time.Second
	defaultRetryBudget        = 500
	// freeRetries is how many retries of each call cost no budget.
	freeRetries = 2
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
}

// genericDefault is the default of any provider other than aws, azure, gcp.
var genericDefault = providerDefault{rate: 20, burst: 40, floor: 0.2, concurrency: 64}

// opKey names an operation override.
type opKey struct{ service, operation string }

// leafSpec is a leaf bucket's settings.
type leafSpec struct {
	spec  bucket.Spec
	perOp bool // services only: every operation gets its own leaf
}

// retrySettings are a provider's retry bounds.
type retrySettings struct {
	maxRetries int
	baseDelay  time.Duration
	maxBackoff time.Duration
	deadline   time.Duration
	budget     int
}

// providerSettings is a provider's resolved configuration: defaults merged
// with the user's settings. It is immutable once built and comparable with
// equal(), which is what makes Configure idempotent per provider.
type providerSettings struct {
	name     string
	enabled  bool
	leaf     bucket.Spec
	services map[string]leafSpec
	ops      map[opKey]bucket.Spec
	global   *bucket.Spec
	account  *bucket.Spec
	bulkhead int
	breaker  breaker.Spec
	retry    retrySettings
}

func resolveProvider(name string, pc ProviderConfig, globalEnabled bool) *providerSettings {
	d, ok := providerDefaults[name]
	if !ok {
		d = genericDefault
	}
	adaptive := pc.Adaptive == nil || *pc.Adaptive
	goodput := adaptive && pc.Controller == ControllerGoodput
	s := &providerSettings{
		name:    name,
		enabled: globalEnabled && (pc.Enabled == nil || *pc.Enabled),
		leaf: bucket.Spec{
			Rate:     or(pc.MaxRPS, d.rate),
			Burst:    or(pc.Burst, d.burst),
			Floor:    or(pc.MinRPS, d.floor),
			Adaptive: adaptive,
			Goodput:  goodput,
		},
		services: map[string]leafSpec{},
		ops:      map[opKey]bucket.Spec{},
		bulkhead: orInt(pc.MaxConcurrency, d.concurrency),
		breaker: breaker.Spec{
			Threshold:   orInt(pc.BreakerThreshold, defaultBreakerThreshold),
			Cooldown:    int64(orSeconds(pc.BreakerCooldownSeconds, defaultBreakerCooldown)),
			MaxCooldown: int64(orSeconds(pc.BreakerMaxCooldownSeconds, defaultBreakerMaxCooldown)),
		},
		retry: retrySettings{
			maxRetries: orPtr(pc.MaxRetries, defaultMaxRetries),
			baseDelay:  orSeconds(pc.BaseDelaySeconds, defaultBaseDelay),
			maxBackoff: orSeconds(pc.MaxBackoffSeconds, defaultMaxBackoff),
			deadline:   orSeconds(pc.DeadlineSeconds, defaultDeadline),
			budget:     orPtr(pc.RetryBudget, defaultRetryBudget),
		},
	}
	if r := orPtr(pc.GlobalMaxRPS, 0); r > 0 {
		s.global = &bucket.Spec{Rate: r, Burst: pc.GlobalBurst}
	}
	if r := orPtr(pc.AccountMaxRPS, d.accountRate); r > 0 {
		burst := pc.AccountBurst
		if burst == 0 && pc.AccountMaxRPS == nil {
			burst = d.accountBurst
		}
		s.account = &bucket.Spec{Rate: r, Burst: burst}
	}
	merged := map[string]ServiceConfig{}
	for k, v := range d.services {
		merged[k] = ServiceConfig{MaxRPS: v.rate, Burst: v.burst, PerOperation: boolPtr(v.perOp)}
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
	for k, v := range merged {
		if _, _, isOp := strings.Cut(k, "."); isOp {
			continue
		}
		s.services[k] = leafSpec{spec: s.serviceSpec(v, adaptive, goodput), perOp: v.PerOperation != nil && *v.PerOperation}
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
		s.ops[opKey{svc, op}] = s.serviceSpec(base, adaptive, goodput)
	}
	return s
}

// serviceSpec is the bucket of a service (or operation) entry: zero fields
// take the provider's leaf.
func (s *providerSettings) serviceSpec(v ServiceConfig, adaptive, goodput bool) bucket.Spec {
	spec := bucket.Spec{
		Rate:     or(v.MaxRPS, s.leaf.Rate),
		Burst:    v.Burst,
		Floor:    or(v.MinRPS, s.leaf.Floor),
		Adaptive: adaptive,
		Goodput:  goodput,
	}
	if v.MaxRPS == 0 && v.Burst == 0 {
		spec.Burst = s.leaf.Burst
	}
	return spec
}

// leafKey returns the scope of the leaf bucket (and breaker) for a call:
// the operation is kept where the service is per operation or has an
// override for it.
func (s *providerSettings) leafKey(sc Scope) Scope {
	if sc.Operation == "" {
		return sc
	}
	if ls, ok := s.services[sc.Service]; ok && ls.perOp {
		return sc
	}
	if len(s.ops) > 0 {
		if _, ok := s.ops[opKey{sc.Service, sc.Operation}]; ok {
			return sc
		}
	}
	sc.Operation = ""
	return sc
}

// leafSpec returns the bucket settings of a leaf key.
func (s *providerSettings) leafSpec(key Scope) bucket.Spec {
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
// and bulkheads (everything but the retry settings).
func (s *providerSettings) limitsEqual(o *providerSettings) bool {
	if s.enabled != o.enabled || s.leaf != o.leaf ||
		s.bulkhead != o.bulkhead || s.breaker != o.breaker ||
		!specPtrEqual(s.global, o.global) || !specPtrEqual(s.account, o.account) ||
		len(s.services) != len(o.services) || len(s.ops) != len(o.ops) {
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

func specPtrEqual(a, b *bucket.Spec) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func or(v, d float64) float64 {
	if v > 0 {
		return v
	}
	return d
}

func orInt(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

func orPtr[T any](v *T, d T) T {
	if v != nil {
		return *v
	}
	return d
}

func orSeconds(v float64, d time.Duration) time.Duration {
	if v > 0 {
		return clampDuration(v * float64(time.Second))
	}
	return d
}

// maxDuration bounds every configured time (about 36 years), so that
// adding one to a clock reading cannot overflow: "a very long time" stays
// very long instead of wrapping negative.
const maxDuration = time.Duration(1 << 60)

func clampDuration(ns float64) time.Duration {
	if ns >= float64(maxDuration) {
		return maxDuration
	}
	return time.Duration(ns)
}

func boolPtr(b bool) *bool { return &b }
