package resilience

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Validate reports every setting that cannot work, each naming its key
// path (ratelimit.aws.max_rps: must be > 0), joined with errors.Join: a
// value out of its range, two settings that contradict each other
// (min_rps above max_rps, base_delay_seconds above max_backoff_seconds, a
// breaker cooldown outside [1 s, 600 s] or above its maximum, a burst
// below one token or set for a bucket that is off), and a service key that
// no call can match. A setting compared with one left unset is compared
// with that one's built-in default.
func (c Config) Validate() error {
	var errs []error
	for _, p := range []struct {
		name string
		pc   *ProviderConfig
	}{{"aws", &c.AWS}, {"azure", &c.Azure}, {"gcp", &c.GCP}} {
		errs = append(errs, p.pc.validate(p.name)...)
	}
	return errors.Join(errs...)
}

// Breaker cooldowns are kept within [minCooldown, maxCooldown]: a shorter
// one lets a failing scope be probed in a tight loop, a longer one keeps a
// recovered scope shut for more than the provider's longest pause.
const (
	minCooldown = time.Second
	maxCooldown = 600 * time.Second
)

func (p *ProviderConfig) validate(name string) []error {
	path := "ratelimit." + name
	d, ok := providerDefaults[name]
	if !ok {
		d = genericDefault
	}
	var errs []error
	bad := func(key, msg string) { errs = append(errs, fieldErr(path+"."+key, msg)) }
	for _, f := range []struct {
		key string
		v   float64
	}{
		{"max_rps", p.MaxRPS}, {"burst", p.Burst}, {"min_rps", p.MinRPS},
		{"global_burst", p.GlobalBurst}, {"account_burst", p.AccountBurst},
		{"max_concurrency", float64(p.MaxConcurrency)}, {"breaker_threshold", float64(p.BreakerThreshold)},
		{"breaker_cooldown_seconds", p.BreakerCooldownSeconds},
		{"breaker_max_cooldown_seconds", p.BreakerMaxCooldownSeconds},
		{"base_delay_seconds", p.BaseDelaySeconds}, {"max_backoff_seconds", p.MaxBackoffSeconds},
		{"deadline_seconds", p.DeadlineSeconds},
	} {
		if !validNonNegative(f.v) {
			bad(f.key, "must be > 0")
		}
	}
	for _, f := range []struct {
		key string
		v   *float64
	}{{"global_max_rps", p.GlobalMaxRPS}, {"account_max_rps", p.AccountMaxRPS}} {
		if f.v != nil && !validNonNegative(*f.v) {
			bad(f.key, "must be >= 0 (0 turns the bucket off)")
		}
	}
	if p.BreakerDeadSeconds != nil && !validNonNegative(*p.BreakerDeadSeconds) {
		bad("breaker_dead_seconds", "must be >= 0 (0 turns it off)")
	}
	if p.MaxRetries != nil && *p.MaxRetries < 0 {
		bad("max_retries", "must be >= 0")
	}
	if p.RetryBudget != nil && *p.RetryBudget < 0 {
		bad("retry_budget", "must be >= 0")
	}
	switch p.Controller {
	case "", controllerAIMD, controllerGoodput:
	default:
		bad("controller", fmt.Sprintf("unknown controller %q (aimd or goodput)", p.Controller))
	}
	if len(errs) > 0 {
		return errs // the comparisons below need valid numbers
	}

	// The leaf: its floor within its ceiling, a burst of a whole token.
	errs = append(errs, order(path, "min_rps", p.MinRPS, "max_rps", p.MaxRPS, d.rate)...)
	if p.Burst > 0 && p.Burst < 1 {
		bad("burst", "must be >= 1 (a bucket holds at least one token)")
	}
	// The breaker.
	if c := p.BreakerCooldownSeconds; c > 0 && (c < minCooldown.Seconds() || c > maxCooldown.Seconds()) {
		bad("breaker_cooldown_seconds", fmt.Sprintf("%s is outside [%s, %s]", seconds(c), seconds(minCooldown.Seconds()), seconds(maxCooldown.Seconds())))
	} else {
		errs = append(errs, order(path, "breaker_cooldown_seconds", p.BreakerCooldownSeconds,
			"breaker_max_cooldown_seconds", p.BreakerMaxCooldownSeconds, defaultBreakerMaxCooldown.Seconds())...)
	}
	// The backoff.
	errs = append(errs, order(path, "base_delay_seconds", p.BaseDelaySeconds,
		"max_backoff_seconds", p.MaxBackoffSeconds, defaultMaxBackoff.Seconds())...)
	// The provider and account buckets: a burst needs a rate, and a
	// whole token.
	for _, b := range []struct {
		rate, burst string
		r           float64
		v           float64
	}{
		{"global_max_rps", "global_burst", derefOr(p.GlobalMaxRPS, 0), p.GlobalBurst},
		{"account_max_rps", "account_burst", derefOr(p.AccountMaxRPS, d.accountRate), p.AccountBurst},
	} {
		switch {
		case b.v == 0:
		case b.r == 0:
			bad(b.burst, fmt.Sprintf("has no effect: %s is 0 (the bucket is off)", b.rate))
		case b.v < 1:
			bad(b.burst, "must be >= 1 when "+b.rate+" is set (a bucket holds at least one token)")
		}
	}
	errs = append(errs, p.validateServices(name, d)...)
	return errs
}

// validateServices checks the service and operation overrides, in key
// order.
func (p *ProviderConfig) validateServices(provider string, d providerDefault) []error {
	names := make([]string, 0, len(p.Services))
	for name := range p.Services {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		s := p.Services[name]
		sp := "ratelimit." + provider + ".services." + name
		if name == "" || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Count(name, ".") > 1 {
			errs = append(errs, fieldErr(sp, `a service key is "<service>" or "<service>.<Operation>"`))
			continue
		}
		if msg := neverMatches(provider, name); msg != "" {
			errs = append(errs, fieldErr(sp, msg))
		}
		valid := true
		for _, f := range []struct {
			key string
			v   float64
		}{{"max_rps", s.MaxRPS}, {"burst", s.Burst}, {"min_rps", s.MinRPS}} {
			if !validNonNegative(f.v) {
				errs = append(errs, fieldErr(sp+"."+f.key, "must be > 0"))
				valid = false
			}
		}
		if s.PerOperation != nil && strings.Contains(name, ".") {
			errs = append(errs, fieldErr(sp+".per_operation", "only a service key can set per_operation"))
		}
		if !valid {
			continue
		}
		if s.Burst > 0 && s.Burst < 1 {
			errs = append(errs, fieldErr(sp+".burst", "must be >= 1 (a bucket holds at least one token)"))
		}
		if s.MinRPS > 0 {
			// The ceiling in force: the entry's, its service's (an
			// operation starts from its service), built in, the leaf's.
			rate := positiveOr(p.MaxRPS, d.rate)
			svc, _, _ := strings.Cut(name, ".")
			for _, k := range []string{svc, name} {
				if bd, ok := d.services[k]; ok {
					rate = bd.rate
				}
				if u, ok := p.Services[k]; ok && u.MaxRPS > 0 {
					rate = u.MaxRPS
				}
			}
			if s.MinRPS > rate {
				errs = append(errs, fieldErr(sp+".min_rps", fmt.Sprintf("%s is above the max_rps in force here (%s)", rps(s.MinRPS), rps(rate))))
			}
		}
	}
	return errs
}

// neverMatches explains why an override key of provider matches no call,
// or is "". The AWS integration names scopes' services with botocore's
// lower-case names (ec2, secretsmanager) and operations as the SDK does
// (DescribeInstances), so a key spelt otherwise is a mistake the governor
// would otherwise ignore in silence.
func neverMatches(provider, key string) string {
	if provider != "aws" {
		return ""
	}
	svc, op, isOp := strings.Cut(key, ".")
	if lower := strings.ToLower(svc); lower != svc {
		want := lower
		if isOp {
			want += "." + op
		}
		return fmt.Sprintf("never matches: AWS service names are lower case, as botocore spells them (%s)", want)
	}
	if isOp && !unicode.IsUpper([]rune(op)[0]) {
		return "never matches: AWS operation names are PascalCase, as the SDK spells them (ec2.DescribeInstances)"
	}
	return ""
}

// order reports low above high, two settings of which the first must not
// exceed the second, when low is set: an unset high (0) stands at its
// default. An unset low is no mistake, since a default yields to what is
// set (a max_rps below the default floor lowers the floor with it).
func order(path, lowKey string, low float64, highKey string, high, highDefault float64) []error {
	h := positiveOr(high, highDefault)
	if low == 0 || low <= h {
		return nil
	}
	unit := rps
	if strings.HasSuffix(lowKey, "_seconds") {
		unit = seconds
	}
	ref := unit(h)
	if high == 0 {
		ref += ", the default"
	}
	return []error{fieldErr(path+"."+lowKey, fmt.Sprintf("%s is above %s (%s)", unit(low), highKey, ref))}
}

func validNonNegative(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }

func seconds(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) + " s" }

func rps(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) + " rps" }
