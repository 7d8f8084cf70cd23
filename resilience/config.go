package resilience

import (
	"fmt"
	"os"

	"github.com/cloudg/cloudg/internal/yamlconf"
)

// Config is the ratelimit section of a configuration: the settings of the
// governor. The
// zero Config means every built-in default. Fields left at their zero value
// (or nil, for pointers) take the built-in default; pointer fields are the
// ones where zero is a meaningful setting (0 retries, a bucket turned off).
//
// AWS, Azure and GCP have built-in defaults of their own; any other
// provider name (github, or your own API's) starts from the generic
// defaults (20 rps, burst 40, floor 0.2, 64 in flight, 8 retries) and is
// tuned under Providers. github has GitHub's documented limits built in
// beside them for its services search (30 requests a minute) and
// code_search (10 a minute); its rest and graphql, whose quotas depend on
// the token, run at the generic leaf.
//
// A Config is a value the governor copies (Configure, NewGovernor) and
// never changes: several goroutines may read one, and changing one that
// another goroutine reads (its maps, its pointers) is a race, as for any
// Go map.
type Config struct {
	// Enabled: false turns every provider off; calls go straight through.
	Enabled *bool          `yaml:"enabled,omitempty" json:"enabled,omitempty"`
	AWS     ProviderConfig `yaml:"aws,omitempty" json:"aws,omitzero"`
	Azure   ProviderConfig `yaml:"azure,omitempty" json:"azure,omitzero"`
	GCP     ProviderConfig `yaml:"gcp,omitempty" json:"gcp,omitzero"`
	// Providers tunes the providers other than aws, azure and gcp, by the
	// provider name of their scopes (ratelimit.providers.github.max_rps):
	// each takes the same settings as the three, from the generic
	// defaults (github's with GitHub's search and code_search limits
	// built in), and is reconfigured by Configure as they are. aws, azure
	// and gcp are not keys here: they have their own fields.
	Providers map[string]ProviderConfig `yaml:"providers,omitempty" json:"providers,omitempty"`
}

// Provider returns the settings of the provider name: AWS, Azure or GCP
// for "aws", "azure" and "gcp", the entry of Providers for any other name
// (the zero ProviderConfig, every default, when it has none).
func (c Config) Provider(name string) ProviderConfig {
	switch name {
	case "aws":
		return c.AWS
	case "azure":
		return c.Azure
	case "gcp":
		return c.GCP
	}
	return c.Providers[name]
}

// ProviderConfig tunes one provider. The repository's README.md lists the
// defaults of each provider (its configuration reference; this package has
// no README of its own). The zero ProviderConfig is every built-in
// default of its provider. Like Config, it is a value the governor copies
// and several goroutines may read.
type ProviderConfig struct {
	// Enabled: false calls fn once, directly, with no pacing and no retries.
	Enabled *bool `yaml:"enabled,omitempty" json:"enabled,omitempty"`
	// Adaptive: false keeps the leaf rates fixed (no AIMD).
	Adaptive *bool `yaml:"adaptive,omitempty" json:"adaptive,omitempty"`
	// Controller chooses how an adaptive leaf reacts to throttling: "aimd"
	// (additive increase, multiplicative decrease: the default) or
	// "goodput" (opt-in: on a throttle, go to what the provider served
	// since the previous throttle; after 8 s without one, probe upward by
	// a step that doubles every second, or, once the limit was seen to
	// move, by draining every few seconds at twice the rate until the next
	// throttle; when the queue of waiting callers shows the demand ending,
	// double the rate until the next throttle, so that the last calls use
	// what the provider stored; fleet mode leaves the drains and that last
	// rule out). goodput beside Adaptive false, whose leaf rates are
	// fixed, is an error.
	Controller string `yaml:"controller,omitempty" json:"controller,omitempty"`

	// The leaf bucket (per account x region x service, or operation).
	// MinRPS is the floor of its adaptive rate; unset, it is the
	// provider's default floor, or, for a leaf whose ceiling is below that,
	// as far below the ceiling as the default floor is below the default
	// max_rps (1% for aws), and in either case no lower than the slowest
	// rate DeadlineSeconds serves (max_rps: 0.0042, 15 requests an hour,
	// needs no min_rps beside it, and a throttle halves it down to 0.00112
	// rps, a token every 893 s, with the default 900 s; a DeadlineSeconds
	// of 3 raises aws's default floor of 0.2 rps, a token every 5 s, to
	// 0.334 rps).
	MaxRPS float64 `yaml:"max_rps,omitempty" json:"max_rps,omitempty" range:">0"`
	Burst  float64 `yaml:"burst,omitempty" json:"burst,omitempty" range:">0"`
	MinRPS float64 `yaml:"min_rps,omitempty" json:"min_rps,omitempty" range:">0"`

	// The provider-wide bucket; nil: built-in (off), 0: off.
	GlobalMaxRPS *float64 `yaml:"global_max_rps,omitempty" json:"global_max_rps,omitempty" range:">=0;0 turns the bucket off"`
	GlobalBurst  float64  `yaml:"global_burst,omitempty" json:"global_burst,omitempty" range:">0"`
	// The per-account bucket; nil: built-in (Azure 20 rps burst 200, others
	// off), 0: off.
	AccountMaxRPS *float64 `yaml:"account_max_rps,omitempty" json:"account_max_rps,omitempty" range:">=0;0 turns the bucket off"`
	AccountBurst  float64  `yaml:"account_burst,omitempty" json:"account_burst,omitempty" range:">0"`

	// PerOperation: true gives every operation of every service its own
	// leaf bucket and breaker, as EC2's have by default: most AWS APIs are
	// limited per action, so that a throttled DescribeSecret neither slows
	// nor pauses ListSecrets. A service's own per_operation (false) keeps
	// it whole. nil or false: per service (except the built-in per
	// operation services).
	PerOperation *bool `yaml:"per_operation,omitempty" json:"per_operation,omitempty"`

	// MaxConcurrency caps the calls in flight per provider x account.
	MaxConcurrency int `yaml:"max_concurrency,omitempty" json:"max_concurrency,omitempty" range:">0"`

	// Circuit breaker. BreakerThreshold is at most 268435456 (1<<28), the
	// most consecutive failures a breaker counts.
	BreakerThreshold          int     `yaml:"breaker_threshold,omitempty" json:"breaker_threshold,omitempty" range:">0"`
	BreakerCooldownSeconds    float64 `yaml:"breaker_cooldown_seconds,omitempty" json:"breaker_cooldown_seconds,omitempty" range:">0"`
	BreakerMaxCooldownSeconds float64 `yaml:"breaker_max_cooldown_seconds,omitempty" json:"breaker_max_cooldown_seconds,omitempty" range:">0"`
	// BreakerWait (opt-in) makes a call that an open breaker would refuse
	// wait, within its deadline, for the breaker's verdict: the end of its
	// cooldown, then its single probe's answer. A call whose retries run
	// out on a transient error counts its failure and waits likewise
	// before it tries again with its attempts renewed, and so does the
	// retry of a transient error that the breaker held until its verdict.
	// By default an open breaker fails a call at once with a
	// *CircuitOpenError.
	BreakerWait bool `yaml:"breaker_wait,omitempty" json:"breaker_wait,omitempty"`
	// BreakerDeadSeconds opens a scope's breaker at once when every answer
	// of the scope for this long was throttling or a transient error (at
	// least breaker_threshold answers, and no success among them): the
	// scope is dead, throttled for good or down, and its calls are lost in
	// seconds instead of each spending its retries. nil: 10 seconds; 0
	// turns it off, so that only calls that failed after their retries
	// count towards the breaker.
	BreakerDeadSeconds *float64 `yaml:"breaker_dead_seconds,omitempty" json:"breaker_dead_seconds,omitempty" range:">=0;0 turns it off"`

	// Retries of Call and Do (the SDK integrations let the SDK retry, within
	// the same budget).
	MaxRetries *int `yaml:"max_retries,omitempty" json:"max_retries,omitempty" range:">=0"`
	// MaxAttempts is MaxRetries counted as RetryPolicy.MaxAttempts counts:
	// attempts, the first included (max_attempts: 9 is max_retries: 8).
	// Set one or the other.
	MaxAttempts       *int    `yaml:"max_attempts,omitempty" json:"max_attempts,omitempty" range:">=1;the first attempt counts"`
	BaseDelaySeconds  float64 `yaml:"base_delay_seconds,omitempty" json:"base_delay_seconds,omitempty" range:">0"`
	MaxBackoffSeconds float64 `yaml:"max_backoff_seconds,omitempty" json:"max_backoff_seconds,omitempty" range:">0"`
	DeadlineSeconds   float64 `yaml:"deadline_seconds,omitempty" json:"deadline_seconds,omitempty" range:">0"`
	RetryBudget       *int    `yaml:"retry_budget,omitempty" json:"retry_budget,omitempty" range:">=0"`

	// Services overrides the leaf per service ("ec2") or per operation
	// ("ec2.DescribeInstances"); an operation key gives that operation its
	// own leaf and breaker.
	Services map[string]ServiceConfig `yaml:"services,omitempty" json:"services,omitempty"`
}

// ServiceConfig overrides the leaf bucket of a service or an operation.
// Zero fields inherit the built-in service entry, then the provider's leaf,
// except MinRPS, which is the provider's MinRPS when that is set and
// otherwise the default floor, lowered for an entry whose ceiling is below
// it as ProviderConfig's MinRPS says,
// and the burst of an entry that sets MaxRPS: without a Burst of its
// own it is twice that rate (ec2: {max_rps: 5} bursts 10, not the built-in
// entry's 100). An operation starts from its service's entry. A built-in
// service or operation entry is a default more specific than what is
// written at a wider level: a provider's MaxRPS or Burst (or, for a
// built-in operation, its service's) leaves it as it is (aws: {max_rps:
// 30} keeps sts at its built-in 50 rps, and aws: {max_rps: 5} too, which
// the governor warns of, WithLogger), and an entry written at its own
// level replaces it; a hard cap over a provider or an account is
// ProviderConfig's GlobalMaxRPS or AccountMaxRPS. The zero
// ServiceConfig sets no rate of its own: the entry takes its service's
// settings as above (under an operation key, the operation still gets a
// leaf and breaker of its own). Like Config, it is a value the governor
// copies and several goroutines may read.
type ServiceConfig struct {
	MaxRPS float64 `yaml:"max_rps,omitempty" json:"max_rps,omitempty" range:">0"`
	Burst  float64 `yaml:"burst,omitempty" json:"burst,omitempty" range:">0"`
	MinRPS float64 `yaml:"min_rps,omitempty" json:"min_rps,omitempty" range:">0"`
	// PerOperation gives every operation of the service its own leaf and
	// breaker (built in for AWS ec2).
	PerOperation *bool `yaml:"per_operation,omitempty" json:"per_operation,omitempty"`
}

// clone returns a copy of c that shares no map or pointer with it. The
// governor keeps one, so that a caller who changes its Config after
// Configure, or the Config that Governor.Config returned, changes nothing
// in force (a provider under Providers is resolved at its first call).
func (c Config) clone() Config {
	c.Enabled = clonePtr(c.Enabled)
	c.AWS, c.Azure, c.GCP = c.AWS.clone(), c.Azure.clone(), c.GCP.clone()
	if c.Providers != nil {
		ps := make(map[string]ProviderConfig, len(c.Providers))
		for name, pc := range c.Providers {
			ps[name] = pc.clone()
		}
		c.Providers = ps
	}
	return c
}

// clone returns a copy of p that shares no map or pointer with it.
func (p ProviderConfig) clone() ProviderConfig {
	p.Enabled, p.Adaptive, p.PerOperation = clonePtr(p.Enabled), clonePtr(p.Adaptive), clonePtr(p.PerOperation)
	p.GlobalMaxRPS, p.AccountMaxRPS, p.BreakerDeadSeconds = clonePtr(p.GlobalMaxRPS), clonePtr(p.AccountMaxRPS), clonePtr(p.BreakerDeadSeconds)
	p.MaxRetries, p.MaxAttempts, p.RetryBudget = clonePtr(p.MaxRetries), clonePtr(p.MaxAttempts), clonePtr(p.RetryBudget)
	if p.Services != nil {
		ss := make(map[string]ServiceConfig, len(p.Services))
		for name, sc := range p.Services {
			sc.PerOperation = clonePtr(sc.PerOperation)
			ss[name] = sc
		}
		p.Services = ss
	}
	return p
}

// clonePtr returns a pointer to a copy of *v, or nil.
func clonePtr[T any](v *T) *T {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// The controllers of an adaptive leaf.
const (
	controllerAIMD    = "aimd"
	controllerGoodput = "goodput"
)

func fieldErr(path, msg string) error { return &yamlconf.Error{Path: path, Msg: msg} }

// LoadConfig reads a YAML or JSON file with ParseConfig.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}
