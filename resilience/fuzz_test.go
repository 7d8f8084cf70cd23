package resilience

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"testing"

	"github.com/cloudg/cloudg/internal/breaker"
	"github.com/cloudg/cloudg/state"
)

func FuzzClassify(f *testing.F) {
	f.Add("Throttling", 400, "Rate exceeded", "5", 2)
	f.Add("", 429, "", "Mon, 30 Nov 2026 12:00:30 GMT", 0)
	f.Add("LimitExceededException", 400, "too many per second", "abc", 5)
	f.Add("", 0, "dial https://x: tps", "", 30)
	f.Add("", 400, "Throttling: Rate exceeded", "", 1)
	f.Add("UnknownError", 400, "Rate exceeded", "", 3)
	f.Add("UnknownError", 403, "UnknownError", "", 4)
	f.Fuzz(func(t *testing.T, code string, status int, msg, retryAfter string, depth int) {
		var err error = &apiErr{code: code, status: status, msg: msg, header: http.Header{"Retry-After": {retryAfter}}}
		levels := max(depth%40, 0) // how deep the answer lies
		for range levels {
			err = fmt.Errorf("w: %w", err)
		}
		if depth%3 == 0 {
			err = errors.Join(err, errors.New(msg))
			levels++
		}
		k := Classify(err)
		if k != Fatal && k != Transient && k != Throttled {
			t.Fatalf("kind %d", k)
		}
		sk, decided := ClassifyStrict(err)
		if decided && sk != k {
			t.Fatalf("strict %v, full %v", sk, k)
		}
		// When nothing decides, the message does.
		if !decided && k != Fatal && (k != Throttled || !mentionsThrottling(err.Error())) {
			t.Fatalf("nothing decided, and %q classified %v", err, k)
		}
		if !decided && k == Fatal && mentionsThrottling(err.Error()) {
			t.Fatalf("nothing decided, and %q, which mentions throttling, classified %v", err, k)
		}
		// An answer with a status on no list and no code (or the AWS
		// SDK's placeholder UnknownError) decides nothing.
		if _, listed := statusKind(status); levels <= maxChainDepth && !listed && (code == "" || code == "UnknownError") && decided {
			t.Fatalf("code %q, status %d: strict classification decided %v", code, status, sk)
		}
		if d, ok := RetryAfter(err); ok && d < 0 {
			t.Fatalf("negative hint %v", d)
		}
		_ = IsProviderAnswer(err)
		_ = DescribeError(err)
	})
}

// FuzzParseConfig holds ParseConfig to what its documentation promises
// of any document: a refusal is *ConfigErrors only, each naming the key
// path it is about; an accepted configuration validates, makes a
// governor, reads back from its own JSON as the same settings, and every leaf it
// makes can serve a call and slow down on a throttle (a rate above zero,
// a whole token, a floor not above the ceiling, which the bucket would
// otherwise clamp), with the controller it asked for.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"aws:\n  services:\n    ec2:\n      brust: 10\n",
		"ratelimit:\n  azure:\n    account_max_rps: 0\n    services:\n      network: {max_rps: 30, burst: 200}\n",
		`{"gcp": {"breaker_cooldown_seconds": "90s", "max_retries": 0}}`,
		"a: &x {b: *x}\n",
		"aws: {max_rps: 1e400}\n",
		"providers: {github: {max_rps: 1.4, services: {search: {max_rps: 0.5, min_rps: 0.05}}, live_cooldown_seconds: 3}}\n",
		"aws: {max_rps: 1e-9, min_rps: 1e-9}\n",
		"aws: {max_retries: 3}\n",
		"azure: {services: {Microsoft.Network: {max_rps: 2}}}\n",
		"aws: {min_rps: 6}\n",
		"gcp: {services: {cloudasset: {min_rps: 2}}}\n",
		"gcp: {services: {}}\n",
		"aws: {adaptive: false, controller: goodput}\n",
		"aws: {per_operation: true, services: {ec2: {per_operation: false}, iam.ListRoles: {burst: 3}}}\n",
		"aws: {retry_mode: standard}\nrate_limit: {aws: {max_rps: 5}}\n",
		"enabled: false\nazure: {account_max_rps: 5, account_burst: 7, global_max_rps: 50, deadline_seconds: 1m}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			checkConfigErrors(t, err)
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("ParseConfig accepted a config Validate rejects: %v", err)
		}
		if _, err := NewGovernor(cfg); err != nil {
			t.Fatalf("NewGovernor rejected a parsed config: %v", err)
		}
		// Its own JSON, as the long form, reads back as the same config.
		js, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseConfig([]byte(`{"ratelimit": ` + string(js) + `}`))
		if err != nil {
			t.Fatalf("its JSON %s: %v", js, err)
		}
		names := []string{"aws", "azure", "gcp"}
		for name := range cfg.Providers {
			names = append(names, name)
		}
		if (cfg.Enabled == nil) != (again.Enabled == nil) || len(again.Providers) != len(cfg.Providers) {
			t.Fatalf("its JSON %s reads back as %+v", js, again)
		}
		for _, name := range names {
			pc := cfg.Provider(name)
			set := resolveProvider(name, pc, true)
			if back := resolveProvider(name, again.Provider(name), true); !set.limitsEqual(back) || set.retry != back.retry ||
				set.budget != back.budget || set.dead != back.dead || set.breakerWait != back.breakerWait {
				t.Fatalf("%s: its JSON %s reads back as other settings", name, js)
			}
			specs := map[string]state.BucketSpec{"leaf": set.leaf}
			for k, v := range set.services {
				specs["services."+k] = v.spec
			}
			for k, v := range set.ops {
				specs["services."+k.service+"."+k.operation] = v
			}
			for k, sp := range specs {
				if !(sp.Rate > 0) || math.IsInf(sp.Rate, 0) || sp.Capacity() < 1 || !(sp.Floor > 0) || sp.Floor > sp.Rate {
					t.Fatalf("%s %s: %+v: a leaf that cannot serve a call or that no throttle slows", name, k, sp)
				}
				if sp.Goodput != (pc.Controller == controllerGoodput) {
					t.Fatalf("%s %s: %+v: controller %q", name, k, sp, pc.Controller)
				}
			}
			for k, sp := range map[string]*state.BucketSpec{"global": set.global, "account": set.account} {
				if sp != nil && (!(sp.Rate > 0) || sp.Capacity() < 1) {
					t.Fatalf("%s %s bucket: %+v", name, k, sp)
				}
			}
			r := set.retry
			if r.attempts < 1 || r.base <= 0 || r.maxBackoff <= 0 || r.deadline <= 0 || set.budget < 0 || set.dead < 0 {
				t.Fatalf("%s: retry %+v, budget %d, dead %v", name, r, set.budget, set.dead)
			}
			if b := set.breaker; b.Threshold < 1 || b.Threshold > breaker.MaxThreshold || b.Cooldown < minCooldown || b.Cooldown > maxCooldown || b.MaxCooldown < b.Cooldown {
				t.Fatalf("%s: breaker %+v", name, b)
			}
		}
	})
}

// checkConfigErrors fails unless every error err joins is a *ConfigError
// with a key path and a message, as ParseConfig's documentation says.
func checkConfigErrors(t *testing.T, err error) {
	t.Helper()
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("%T %v: no *ConfigError", err, err)
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			checkConfigErrors(t, e)
		}
		return
	}
	if !errors.As(err, &ce) || err != error(ce) || ce.Path == "" || ce.Msg == "" {
		t.Fatalf("%T %q: not a *ConfigError with a path and a message", err, err)
	}
}
