package resilience

import (
	"math"
	"strings"
	"testing"
)

// A deadline_seconds longer than the longest time the governor keeps
// (maxDuration, 2^60 ns, about 36.5 years) would be shortened to it, so
// that the rates Validate compares with the deadline as written (a token
// every 1e10 s under deadline_seconds: 2e10) are refused at once under
// the deadline in force: Validate refuses it, saying the most it can be,
// whether read from YAML (in seconds or as a duration) or built in code,
// and no other mistake's fix suggests a deadline_seconds above it.
func TestADeadlineLongerThanTheGovernorKeepsIsRefused(t *testing.T) {
	const tooLong = "is above the longest deadline the governor keeps (1152921504.606846976 s, 2^60 ns, about 36.5 years)"
	wantMistakes(t, "aws: {max_rps: 1e-10, min_rps: 1e-10, deadline_seconds: 2e10}\n",
		"ratelimit.aws.deadline_seconds: 2e+10 s "+tooLong)
	wantMistakes(t, "gcp: {deadline_seconds: 400000h}\n",
		"ratelimit.gcp.deadline_seconds: 1.44e+09 s "+tooLong)
	wantMistakes(t, "providers: {myapi: {deadline_seconds: 1152921505}}\n",
		"ratelimit.providers.myapi.deadline_seconds: 1.152921505e+09 s "+tooLong)
	// A duration longer than a time.Duration holds is read as its
	// seconds: refused for what it is, not told a bound (2562047h) that
	// is itself refused.
	wantMistakes(t, "azure: {deadline_seconds: 3000000h}\n",
		"ratelimit.azure.deadline_seconds: 1.08e+10 s "+tooLong)
	// The other times are held at the bound, in seconds or as a duration.
	accepted(t, "aws: {max_backoff_seconds: 1.08e10, breaker_max_cooldown_seconds: 1.08e10, breaker_dead_seconds: 1.08e10}\n")
	accepted(t, "aws: {max_backoff_seconds: 3000000h, breaker_max_cooldown_seconds: 3000000h, breaker_dead_seconds: 3000000h}\n")
	// At the bound, and under it: accepted.
	accepted(t, "aws: {deadline_seconds: 1152921504.606846976}\n")
	accepted(t, "aws: {deadline_seconds: 320000h, max_rps: 1e-9, min_rps: 1e-9}\n")
	// In code, too.
	err := Config{Azure: ProviderConfig{DeadlineSeconds: 1e300}}.Validate()
	if want := "ratelimit.azure.deadline_seconds: 1e+300 s " + tooLong; err == nil || err.Error() != want {
		t.Errorf("Validate: %v\nwant %s", err, want)
	}
	// A deadline that is no finite number is that one mistake, not also
	// one above the longest the governor keeps.
	for _, d := range []float64{math.Inf(1), math.NaN()} {
		err := Config{GCP: ProviderConfig{DeadlineSeconds: d}}.Validate()
		if want := "ratelimit.gcp.deadline_seconds: must be a finite number > 0"; err == nil || err.Error() != want {
			t.Errorf("deadline_seconds %v: %v\nwant %s", d, err, want)
		}
	}
	// A rate too slow for any deadline the governor keeps is told to
	// run faster, not to be given a deadline it would refuse.
	wantMistakes(t, "aws: {max_rps: 1e-10, min_rps: 1e-10}\n",
		"ratelimit.aws.max_rps: 1e-10 rps is a token every 1e+10 s, longer than deadline_seconds (900 s, the default): a call that waits for one would be refused; set it to 0.00112 rps or more",
		"ratelimit.aws.min_rps: 1e-10 rps is a token every 1e+10 s, longer than deadline_seconds (900 s, the default): a call that waits for one would be refused; set it to 0.00112 rps or more")
	for _, m := range mistakes(t, "aws: {max_rps: 1e-9, min_rps: 1e-9}\n") {
		if !strings.Contains(m, "ratelimit.aws.deadline_seconds to 1.01e+09 s or more") {
			t.Errorf("a rate a deadline the governor keeps serves: %s, want the deadline_seconds that serves it", m)
		}
	}
}
