package resilience

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
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
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("ParseConfig accepted a config Validate rejects: %v", err)
		}
		if _, err := NewGovernor(cfg); err != nil {
			t.Fatalf("NewGovernor rejected a parsed config: %v", err)
		}
	})
}
