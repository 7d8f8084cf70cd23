package liveop

import (
	"errors"
	"testing"

	"github.com/cloudg/cloudg/internal/scopekey"

	"github.com/cloudg/cloudg/resilience"
)

// FuzzParseConfig holds ParseConfig to what its documentation promises
// of any document: it returns, never panicking; a refusal is
// *resilience.ConfigError values only (joined), each with a key path
// (under ratelimit, or a top-level key of a document whose top-level aws
// is the AWS SDK's section), printable on one line (a key's newline
// quoted), and a message; an accepted configuration validates and makes
// a Guard.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"ratelimit:\n  live_max_concurrent: 2\n  aws: {live_cooldown_seconds: 300}\n  providers: {github: {live_cooldown_seconds: 5}}\n",
		"live_cooldown_seconds: 90s\nlive_cooldown_after_failure: false\n",
		"ratelimit: {live_max_concurrent: 0, live_caller_window_seconds: ~}\n",
		"ratelimit: {LIVE_MAX_CONCURRENT: 1, aws: {services: {ec2: {live_cooldown_seconds: 1}}}}\n",
		"ratelimit: {providers: {AWS: {live_cooldown_seconds: 1}, myapi: {}, MyAPI: {live_cooldown_seconds: 2}}}\n",
		"ratelimit: {<<: {live_max_concurrent: 1}, aws: {<<: {live_cooldown_seconds: 1}}}\n",
		"aws: {retry_mode: standard}\nlive_max_concurrent: 1\n",
		"a: &x {b: *x}\n",
		"ratelimit: {providers: {\"my\\napi\": {live_cooldown_seconds: -1}}, aws: {services: {\"ec\\n2\": {live_x: 1}}}}\n",
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
			t.Fatalf("ParseConfig accepted a config Validate refuses: %v", err)
		}
		if _, err := New(cfg); err != nil {
			t.Fatalf("New refused a parsed config: %v", err)
		}
	})
}

// checkConfigErrors fails unless every error err joins is a
// *resilience.ConfigError with a key path, printable on one line, and a
// message.
func checkConfigErrors(t *testing.T, err error) {
	t.Helper()
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			checkConfigErrors(t, e)
		}
		return
	}
	var ce *resilience.ConfigError
	if !errors.As(err, &ce) || err != error(ce) || ce.Path == "" || ce.Msg == "" {
		t.Fatalf("%T %q: not a *resilience.ConfigError with a path and a message", err, err)
	}
	if !scopekey.Printable(ce.Path) {
		t.Fatalf("%q: path %q is not printable on one line", err, ce.Path)
	}
}
