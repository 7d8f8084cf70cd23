package resilience

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/cloudg/cloudg/internal/breaker"
	"github.com/cloudg/cloudg/internal/scopenames"
	"github.com/cloudg/cloudg/internal/yamlconf"
)

// Validate reports every setting that cannot work, each naming its key path
// (ratelimit.aws.max_rps: must be > 0), joined with errors.Join: a value out
// of its range (the ranges the YAML reader applies too, a
// breaker_threshold above 268435456, the most consecutive failures a breaker
// counts, and a deadline_seconds above 2^60 ns, about 36.5 years, the
// longest the governor keeps, which the rates are compared with; the
// other times, base_delay_seconds, max_backoff_seconds,
// breaker_max_cooldown_seconds and breaker_dead_seconds, are held at
// 2^60 ns, which changes nothing a process lives to see and no
// comparison here reads differently), a rate too low to serve a call (a token no more often than once
// per deadline_seconds, which the error says how to fix, or a max_rps below a
// min_rps set for its leaf), two
// settings that contradict each other (min_rps above the max_rps in force
// for its own leaf, a max_rps set below a min_rps set for its leaf,
// base_delay_seconds above
// max_backoff_seconds, a breaker_cooldown_seconds outside [1 s, 600 s] or
// above breaker_max_cooldown_seconds, which has no upper bound of its own, a
// burst below one token or set for a bucket that is off, the goodput
// controller beside adaptive: false), a name under Providers that has a
// field of its own (aws, azure, gcp) or space around it, or that differs in
// case alone from one an imported integration knows (GitHub, where
// cloudghttp is imported and its scopes say github) or from another name
// under Providers (myapi and MyAPI), and a service key
// that no call can match: one with space around its names, one spelt as no
// scope of the provider is (an AWS service in upper case), or, where an SDK
// integration is imported that knows its provider's names (cloudgaws does
// for aws, cloudghttp for github), a name it does not know. A setting
// compared with one left unset is compared with that one's built-in default,
// except that an unset base_delay_seconds is not compared: a
// max_backoff_seconds below its default caps every backoff at itself; nor is
// an unset min_rps: a leaf whose max_rps is below the default floor of the
// adaptive rate has a floor below its max_rps (1% of it for aws, but no
// less than the slowest rate deadline_seconds serves), so that 15
// requests an hour is max_rps: 0.0042 alone, and a throttle still halves
// it, and the default floor of a leaf is raised to the slowest rate a
// short deadline_seconds serves (aws's 0.2 rps to 0.334 for 3 s); nor is a built-in service's or operation's max_rps the document
// leaves alone compared with the provider's or the service's min_rps that
// floors it among others: a rate the user did not write (or that a
// release adds) does not make their configuration wrong, and such a
// leaf's floor is its rate (aws: {min_rps: 6} holds controltower at its 2
// rps, a throttle not slowing it, as a min_rps equal to the rate does);
// nor is a built-in rate the document leaves alone compared with
// deadline_seconds: one too slow for it (github's code_search, 0.166 rps,
// under deadline_seconds: 5) is accepted, and the governor it is given to
// warns of it (WithLogger).
func (c Config) Validate() error {
	var errs []error
	for _, p := range []struct {
		name string
		pc   *ProviderConfig
	}{{"aws", &c.AWS}, {"azure", &c.Azure}, {"gcp", &c.GCP}} {
		errs = append(errs, p.pc.validate(p.name, "ratelimit."+p.name)...)
	}
	names := make([]string, 0, len(c.Providers))
	for name := range c.Providers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := yamlconf.KeyPath("ratelimit.providers", name)
		if name == "" {
			errs = append(errs, fieldErr("ratelimit.providers", "a provider name is not empty"))
			continue
		}
		if err := yamlconf.ProviderKey(name, names); err != nil {
			errs = append(errs, err)
			continue
		}
		pc := c.Providers[name]
		errs = append(errs, pc.validate(name, path)...)
	}
	return errors.Join(errs...)
}

// A breaker's first cooldown (breaker_cooldown_seconds) is kept within
// [minCooldown, maxCooldown]: a shorter one lets a failing scope be probed
// in a tight loop, a longer one keeps a recovered scope shut for more than
// the provider's longest pause. The most it doubles to after failed probes
// (breaker_max_cooldown_seconds) is only kept at or above it.
const (
	minCooldown = time.Second
	maxCooldown = 600 * time.Second
)

// validate checks the settings of provider name, found at path.
func (p *ProviderConfig) validate(name, path string) []error {
	d, ok := providerDefaults[name]
	if !ok {
		d = genericDefault
	}
	// The ranges, from the fields' range tags.
	errs := yamlconf.CheckRanges(p, path)
	bad := func(key, msg string) { errs = append(errs, fieldErr(path+"."+key, msg)) }
	if p.MaxAttempts != nil && p.MaxRetries != nil {
		bad("max_attempts", "set max_attempts or max_retries, not both")
	}
	switch p.Controller {
	case "", controllerAIMD:
	case controllerGoodput:
		if p.Adaptive != nil && !*p.Adaptive {
			bad("controller", "has no effect: adaptive is false (the leaf rates are fixed)")
		}
	default:
		bad("controller", fmt.Sprintf("unknown controller %q (aimd or goodput)", p.Controller))
	}
	if p.DeadlineSeconds > maxDeadline && !math.IsInf(p.DeadlineSeconds, 1) {
		// The governor would keep maxDuration, and the rates below would
		// be compared with a deadline it does not keep. +Inf is no
		// finite number, the one mistake the ranges report.
		bad("deadline_seconds", seconds(p.DeadlineSeconds)+" is above the longest deadline the governor keeps (1152921504.606846976 s, 2^60 ns, about 36.5 years)")
	}
	if len(errs) > 0 {
		return errs // the comparisons below need valid numbers
	}

	// Rates that can serve a call: each token within the deadline, a
	// ceiling at or above the floor of the adaptive rate.
	deadline := positiveOr(p.DeadlineSeconds, defaultDeadline.Seconds())
	slow := map[string]bool{}
	for _, r := range []struct {
		key string
		v   float64
	}{{"max_rps", p.MaxRPS}, {"min_rps", p.MinRPS}, {"global_max_rps", derefOr(p.GlobalMaxRPS, 0)}, {"account_max_rps", derefOr(p.AccountMaxRPS, 0)}} {
		if msg := tooSlow(r.v, deadline, p.DeadlineSeconds == 0, path); msg != "" {
			bad(r.key, msg)
			slow[r.key] = true
		}
	}
	// The leaf: its floor within its ceiling, a burst of a whole token.
	floorErrs := order(path, "min_rps", p.MinRPS, "max_rps", p.MaxRPS, d.rate)
	errs = append(errs, floorErrs...)
	if p.Burst > 0 && p.Burst < 1 {
		bad("burst", "must be >= 1 (a bucket holds at least one token)")
	}
	// The breaker.
	if p.BreakerThreshold > breaker.MaxThreshold {
		bad("breaker_threshold", fmt.Sprintf("%d is outside [1, %d] (the most consecutive failures a breaker counts)", p.BreakerThreshold, breaker.MaxThreshold))
	}
	if c := p.BreakerCooldownSeconds; c > 0 && (c < minCooldown.Seconds() || c > maxCooldown.Seconds()) {
		bad("breaker_cooldown_seconds", fmt.Sprintf("%s is outside [%s, %s]", seconds(c), seconds(minCooldown.Seconds()), seconds(maxCooldown.Seconds())))
	} else if m := p.BreakerMaxCooldownSeconds; c == 0 && m > 0 && m < defaultBreakerCooldown.Seconds() {
		// The cap of an unset cooldown is compared with its default: the
		// breaker would raise the cap to it.
		bad("breaker_max_cooldown_seconds", fmt.Sprintf("%s is below breaker_cooldown_seconds (%s, the default): set breaker_cooldown_seconds at or below it",
			seconds(m), seconds(defaultBreakerCooldown.Seconds())))
	} else {
		errs = append(errs, order(path, "breaker_cooldown_seconds", p.BreakerCooldownSeconds,
			"breaker_max_cooldown_seconds", p.BreakerMaxCooldownSeconds, defaultBreakerMaxCooldown.Seconds())...)
	}
	// The backoff. An unset base delay is not compared with the cap: a
	// max_backoff_seconds below its default makes every backoff the cap.
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
	// A service's ceiling is compared with the provider's floor only when
	// that floor is itself valid.
	floorOK := len(floorErrs) == 0 && !slow["min_rps"]
	errs = append(errs, p.validateServices(name, path, d, deadline, floorOK)...)
	return errs
}

// tooSlow explains why a rate (0: unset) is too low to serve a call, or
// is "": a token comes no more often than once per deadline (the deadline
// in force, the default when isDefault), so that every call that has to
// wait for one would be refused at once (a wait that reaches the deadline
// has spent it, as Guard's admission reads it). It says what to set
// instead: the lowest rate the deadline serves (slowestRate), or the
// shortest deadline_seconds of the provider at path that serves the rate
// (unless that is above the longest the governor keeps), each the least number of three significant digits beyond the bound, so
// that setting it is enough.
func tooSlow(rate, deadline float64, isDefault bool, path string) string {
	if rate == 0 {
		return ""
	}
	every := digits(1/rate, 12)
	rel := "longer than"
	switch d := inForce(deadline); {
	case every < d:
		return ""
	case every == d:
		rel = "as long as"
	}
	ref := seconds(deadline)
	if isDefault {
		ref += ", the default"
	}
	msg := fmt.Sprintf("%s is a token every %s, %s deadline_seconds (%s): a call that waits for one would be refused; set it to %s or more",
		rps(rate), seconds(apart(every, deadline)), rel, ref, rps(slowestRate(deadline)))
	if d := above3(1 / rate); d <= maxDeadline {
		msg += fmt.Sprintf(", or %s.deadline_seconds to %s or more", path, seconds(d))
	}
	return msg
}

// maxDeadline is the longest deadline_seconds Validate accepts: the
// longest time the governor keeps (maxDuration), in seconds.
var maxDeadline = maxDuration.Seconds()

// apart returns every, a token's interval, to three significant digits, or
// to as many more as tell it from the deadline it is longer than (a
// token every 7.00001 s, not 7 s, against 7 s).
func apart(every, deadline float64) float64 {
	for n := 3; n < 12; n++ {
		if v := digits(every, n); v != deadline || every == deadline {
			return v
		}
	}
	return every
}

// slowestRate returns the lowest rate, to three significant digits, whose
// token comes within deadline (seconds, as in force: inForce): the least
// such rate above 1/deadline, which Config.Validate accepts as a min_rps
// or a max_rps.
func slowestRate(deadline float64) float64 { return above3(1 / inForce(deadline)) }

// inForce returns a deadline_seconds (> 0) as the governor keeps it: a
// nanosecond where it is less (orSeconds), so that the rates compared with
// it are those that serve the deadline in force, and a deadline of 5e-324
// s, whose inverse is infinite, gives numbers.
func inForce(deadline float64) float64 { return max(deadline, 1e-9) }

// validateServices checks the service and operation overrides, in key
// order.
func (p *ProviderConfig) validateServices(provider, path string, d providerDefault, deadline float64, floorOK bool) []error {
	names := make([]string, 0, len(p.Services))
	for name := range p.Services {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		s := p.Services[name]
		sp := yamlconf.KeyPath(path+".services", name)
		if name == "" || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Count(name, ".") > 1 {
			errs = append(errs, fieldErr(sp, `a service key is "<service>" or "<service>.<Operation>"`))
			continue
		}
		if svc, op, isOp := strings.Cut(name, "."); strings.TrimSpace(svc) != svc || strings.TrimSpace(op) != op {
			want := strings.TrimSpace(svc)
			if isOp {
				want += "." + strings.TrimSpace(op)
			}
			errs = append(errs, fieldErr(sp, fmt.Sprintf("a service key has no space around its names (%s)", want)))
			continue
		}
		if msg := neverMatches(provider, name); msg != "" {
			errs = append(errs, fieldErr(sp, msg))
		} else if check := scopenames.Lookup(provider); check != nil {
			svc, op, _ := strings.Cut(name, ".")
			if msg := check(svc, op); msg != "" {
				errs = append(errs, fieldErr(sp, msg))
			}
		}
		ranges := yamlconf.CheckRanges(&s, sp)
		if s.PerOperation != nil && strings.Contains(name, ".") {
			errs = append(errs, fieldErr(sp+".per_operation", "only a service key can set per_operation"))
		}
		if len(ranges) > 0 {
			errs = append(errs, ranges...)
			continue
		}
		if s.Burst > 0 && s.Burst < 1 {
			errs = append(errs, fieldErr(sp+".burst", "must be >= 1 (a bucket holds at least one token)"))
		}
		for _, r := range []struct {
			key string
			v   float64
		}{{"max_rps", s.MaxRPS}, {"min_rps", s.MinRPS}} {
			if msg := tooSlow(r.v, deadline, p.DeadlineSeconds == 0, path); msg != "" {
				errs = append(errs, fieldErr(sp+"."+r.key, msg))
			}
		}
		svc, _, isOp := strings.Cut(name, ".")
		// A max_rps both too slow and below the floor is both mistakes,
		// each with its fix.
		if s.MaxRPS > 0 && s.MinRPS == 0 && floorOK {
			// The floor set for it: the operation's service entry's, the
			// provider's. The default floor is lowered below the ceiling
			// (floors.of), and is none here.
			floor, from := 0.0, ""
			if p.MinRPS > 0 {
				floor, from = p.MinRPS, path+".min_rps"
			}
			if u, ok := p.Services[svc]; isOp && ok && u.MinRPS > 0 {
				floor, from = u.MinRPS, yamlconf.KeyPath(path+".services", svc)+".min_rps"
			}
			if from != "" && s.MaxRPS < floor {
				errs = append(errs, fieldErr(sp+".max_rps", fmt.Sprintf(
					"%s is below the floor of the adaptive rate in force here (%s, %s): set min_rps here at or below it to go this low",
					rps(s.MaxRPS), rps(floor), from)))
			}
		}
		if s.MinRPS > 0 {
			if rate, from := p.ceilingOf(d, name); s.MinRPS > rate {
				ref := rps(rate)
				if from != "" {
					ref += ", " + from
				}
				errs = append(errs, fieldErr(sp+".min_rps", fmt.Sprintf("%s is above the max_rps in force here (%s)", rps(s.MinRPS), ref)))
			}
		}
	}
	return errs
}

// ceilingOf returns the max_rps in force for the service or operation key
// k: the entry's, its service's (an operation starts from its service),
// built in, the provider leaf's; and where it comes from when the
// document does not write it ("built in", or "the default", the
// provider's default leaf rate), "" when it does.
func (p *ProviderConfig) ceilingOf(d providerDefault, k string) (rate float64, from string) {
	svc, _, _ := strings.Cut(k, ".")
	rate = positiveOr(p.MaxRPS, d.rate)
	if p.MaxRPS == 0 {
		from = "the default"
	}
	for _, e := range []string{svc, k} {
		if bd, ok := d.services[e]; ok {
			rate, from = bd.rate, "built in"
		}
		if u, ok := p.Services[e]; ok && u.MaxRPS > 0 {
			rate, from = u.MaxRPS, ""
		}
	}
	return rate, from
}

// neverMatches explains why an override key of provider matches no call
// by its form alone, or is "". The AWS integration names scopes' services
// with botocore's lower-case names (ec2, secretsmanager) and operations as
// the SDK does (DescribeInstances), and the Azure integration its services
// with lower-case namespaces (network), so a key spelt otherwise is a
// mistake the governor would otherwise ignore in silence.
func neverMatches(provider, key string) string {
	svc, op, isOp := strings.Cut(key, ".")
	if provider == "azure" {
		// Package cloudgazure names a scope's service after the resource
		// provider's namespace, lower-cased and without "Microsoft.".
		if isOp && strings.EqualFold(svc, "microsoft") {
			return fmt.Sprintf("never matches: Azure service names are resource provider namespaces without Microsoft., in lower case (%s)", strings.ToLower(op))
		}
		if lower := strings.ToLower(svc); lower != svc {
			want := lower
			if isOp {
				want += "." + op
			}
			return fmt.Sprintf("never matches: Azure service names are resource provider namespaces in lower case (%s)", want)
		}
		return ""
	}
	if provider != "aws" {
		return ""
	}
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
// default. An unset low is checked by the caller where its default
// matters (an unset breaker_cooldown_seconds above
// breaker_max_cooldown_seconds is refused by validate).
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

// round3 rounds v to three significant digits.
func round3(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return r
}

// above3 returns the least number of three significant digits above v
// (> 0), v rounded to twelve first, so that the noise of a division
// (1/0.01 is 100, not a hair above it) does not count: 100 gives 101,
// 1/900 0.00112.
func above3(v float64) float64 {
	v = digits(v, 12)
	unit := math.Pow(10, math.Floor(math.Log10(v))-2)
	return digits((math.Floor(digits(v/unit, 9))+1)*unit, 3)
}

// digits rounds v to n significant digits.
func digits(v float64, n int) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', n, 64), 64)
	return r
}

func seconds(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) + " s" }

func rps(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) + " rps" }

// slowBuiltIn is a built-in service's or operation's rate in force that
// is too slow for its provider's deadline_seconds (tooSlow): Validate
// accepts it, the user not having written it, and the governor warns of
// it (Governor.Configure).
type slowBuiltIn struct {
	path           string // the entry's key path, "ratelimit.azure.services.storage"
	provider       string // the provider's key path, "ratelimit.azure"
	rate, deadline float64
	op             bool
}

// builtInWarning is what the governor warns of, once, of a built-in
// service's or operation's entry a configuration leaves in force: a
// slowBuiltIn or a fastBuiltIn. Its values are comparable.
type builtInWarning interface{ warn(l *slog.Logger) }

// builtInWarnings returns, for the built-in entries of cfg's enabled
// providers whose rate in force is the built-in one (a rate the user
// writes for the entry is checked by Validate), each too slow for its
// provider's deadline_seconds (a slowBuiltIn) and each faster than a
// max_rps the user writes at a wider level (a fastBuiltIn), in the order
// Validate reports mistakes.
func builtInWarnings(cfg Config) []builtInWarning {
	var out []builtInWarning
	add := func(name, path string, pc ProviderConfig) {
		d, ok := providerDefaults[name]
		if !ok || len(d.services) == 0 {
			return
		}
		s := resolveProvider(name, pc, cfg.Enabled == nil || *cfg.Enabled)
		if !s.enabled {
			return
		}
		deadline := positiveOr(pc.DeadlineSeconds, defaultDeadline.Seconds())
		keys := make([]string, 0, len(d.services))
		for k := range d.services {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			svc, op, isOp := strings.Cut(k, ".")
			rate := s.leafSpec(Scope{Service: svc, Operation: op}).Rate
			if rate != d.services[k].rate {
				continue
			}
			if tooSlow(rate, deadline, pc.DeadlineSeconds == 0, path) != "" {
				out = append(out, slowBuiltIn{path: path + ".services." + k, provider: path, rate: rate, deadline: deadline, op: isOp})
			}
			if pc.Services[k].MaxRPS > 0 {
				continue // the user writes the entry itself
			}
			// The nearest max_rps the user writes wider: an
			// operation's service's, else the provider's.
			wide, widePath := pc.MaxRPS, path
			if u := pc.Services[svc].MaxRPS; isOp && u > 0 {
				wide, widePath = u, path+".services."+svc
			}
			if wide > 0 && rate > wide {
				out = append(out, fastBuiltIn{path: path + ".services." + k, wide: widePath, provider: path, rate: rate, wideRate: wide})
			}
		}
	}
	for _, name := range []string{"aws", "azure", "gcp"} {
		add(name, "ratelimit."+name, cfg.Provider(name))
	}
	names := make([]string, 0, len(cfg.Providers))
	for name := range cfg.Providers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		add(name, yamlconf.KeyPath("ratelimit.providers", name), cfg.Providers[name])
	}
	return out
}

// fastBuiltIn is a built-in service's or operation's rate in force above
// a max_rps the user writes at a wider level (its provider's, or its
// service's for an operation): a built-in entry is a default more
// specific than the wider one, and stands, so the governor warns that
// those calls run faster than the user's number (Governor.Configure).
type fastBuiltIn struct {
	path     string // the entry's key path, "ratelimit.aws.services.sts"
	wide     string // the wider level's key path, "ratelimit.aws"
	provider string // the provider's key path, "ratelimit.aws"
	rate     float64
	wideRate float64
}

// warn logs fb at Warn to l: the user's setting and rate, the built-in
// entry and its rate, and the two fixes.
func (fb fastBuiltIn) warn(l *slog.Logger) {
	l.Warn("cloudg: a built-in rate runs faster than a max_rps set above it",
		"setting", fb.wide+".max_rps",
		"rps", fb.wideRate,
		"built_in", fb.path+".max_rps",
		"built_in_rps", fb.rate,
		"fix", fmt.Sprintf("set %s.max_rps to hold it to your rate, or %s.global_max_rps or %s.account_max_rps for a hard cap over the provider or each account", fb.path, fb.provider, fb.provider))
}

// warn logs sb at Warn to l: what it does to a call, and what to set.
func (sb slowBuiltIn) warn(l *slog.Logger) {
	entry := "service's"
	if sb.op {
		entry = "operation's"
	}
	l.Warn("cloudg: a built-in rate is too slow for deadline_seconds",
		"setting", sb.path+".max_rps",
		"built_in_rps", sb.rate,
		"deadline_seconds", sb.deadline,
		"effect", fmt.Sprintf("a token every %s, longer than the deadline: a call that waits for one is refused", seconds(apart(digits(1/sb.rate, 12), sb.deadline))),
		"fix", fmt.Sprintf("set %s.deadline_seconds to %s or more, or the %s max_rps to %s or more if its provider allows it", sb.provider, seconds(above3(1/sb.rate)), entry, rps(slowestRate(sb.deadline))))
}
