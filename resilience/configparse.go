package resilience

import (
	"errors"
	"strings"

	"github.com/cloudg/cloudg/internal/yamlconf"
)

// ParseConfig reads the ratelimit section from YAML or JSON. The section's
// keys are enabled, aws, azure, gcp and providers (every other provider,
// by name: providers: {github: {max_rps: 1.4}}).
//
// One document serves every reader of a configuration, in one of two
// forms. The long form is a whole configuration: its ratelimit key holds
// the section, its top-level aws the AWS SDK's own retry settings
// (max_retries, retry_mode, read by package cloudgaws), and its other
// top-level keys other sections, which this reader passes over. The short
// form is the section alone, as the whole document (aws: {max_rps: 5}).
// A document without a ratelimit key is the short form unless its
// top-level aws holds retry_mode, which only the SDK's section has: then
// it sets no governor setting (aws: {max_retries: 3, retry_mode:
// standard} alone is the SDK's), and a governor setting beside retry_mode,
// or a key that only the section has (providers, live_*) or a likely
// misspelling of ratelimit (RateLimit, rate_limit) at the top of such a
// document, is an error, since neither reader would read it. A top-level aws
// holding max_retries alone, a key of both sections, is the governor's
// when the document has another key of the section (enabled, azure, gcp,
// providers, live_*), and otherwise an error that says how to write
// either (ratelimit: {aws: {max_retries: 3}}, or aws: {max_attempts: 4},
// for the governor's).
//
// Unknown keys, explicit zero or negative rates, bursts, thresholds and
// times, malformed values, empty strings, a null where a number, true or
// false or a string goes (max_rps: ~, enabled: with nothing after it,
// controller: ~, each of which reads as the default that leaving the key
// out says) and settings that contradict
// each other or cannot work (see Config.Validate) are errors that name
// the key path,
// all of a document's at once (joined with errors.Join; errors.As finds
// the first *ConfigError), such as
//
//	ratelimit.aws.services.ec2.brust: unknown key (did you mean burst?)
//	ratelimit.aws.min_rps: 50 rps is above max_rps (5 rps)
//
// Keys ending in _seconds take a number of seconds or a Go duration string
// ("90s", "1m30s"). An empty document is the zero Config. A YAML merge
// key (<<) is not read through: wherever it is, under providers and
// services too, it is an unknown key (ratelimit.aws.<<: unknown key).
//
// The live_* keys of the section (live_cooldown_seconds and the others at
// the top level, live_cooldown_seconds under a provider's key) configure
// the live-operation guard of package liveop, whose ParseConfig reads and
// validates them; this reader passes over them.
func ParseConfig(data []byte) (Config, error) {
	var cfg Config
	n, err := yamlconf.Document(data, "ratelimit")
	if err != nil || n == nil {
		return Config{}, err
	}
	if n, err = yamlconf.RatelimitSection(n); err != nil || n == nil {
		return Config{}, err
	}
	// The decoder's mistakes and the settings' contradictions are all
	// reported: what failed to decode is left at its default, so it adds
	// none of the latter.
	err = errors.Join(configDecoder.Decode(&cfg, n, "ratelimit", false), cfg.Validate())
	if err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// configDecoder decodes the ratelimit section; the ranges of its numbers
// are their fields' range tags, and the paths it skips are package
// liveop's.
var configDecoder = yamlconf.Decoder{Skip: liveKeys, Hint: providerHint}

// providerHint explains an unknown key that holds a mapping: at the top
// of the section, a misspelt ratelimit, the key of the section in a whole
// configuration, or else another provider's settings, which go under
// providers; under a service of services, an operation's settings, which
// go beside the service's as service.Operation (nestedOperation).
func providerHint(path string, mapping bool) string {
	if hint := nestedOperation(path); hint != "" && mapping {
		return hint
	}
	name, ok := strings.CutPrefix(path, "ratelimit.")
	if !ok || !mapping || strings.Contains(name, ".") {
		return ""
	}
	if hint := yamlconf.NearRatelimit(name); hint != "" {
		return hint
	}
	return yamlconf.OtherProvider(name)
}

// nestedOperation returns what an error about the unknown key at path
// adds when the key is under a service of a provider's services
// (ratelimit.aws.services.ec2.DescribeInstances): an operation's
// settings are a key of services of their own, the service's and the
// operation's names joined by a dot, beside the service's. It returns ""
// for any other path.
func nestedOperation(path string) string {
	i := strings.LastIndex(path, ".services.")
	if i < 0 {
		return ""
	}
	svc, op, ok := strings.Cut(path[i+len(".services."):], ".")
	if !ok || svc == "" || op == "" || strings.Contains(op, ".") {
		return ""
	}
	return " (an operation's settings go under services as " + svc + "." + op + ", beside " + svc + "'s own)"
}

// liveKeys are the key paths of the section that package liveop owns.
var liveKeys = map[string]bool{
	"ratelimit.live_cooldown_seconds": true, "ratelimit.live_cooldown_after_failure": true,
	"ratelimit.live_max_concurrent": true, "ratelimit.live_max_concurrent_total": true,
	"ratelimit.live_caller_max_operations": true, "ratelimit.live_caller_window_seconds": true,
	"ratelimit.live_operation_timeout_seconds": true, "ratelimit.aws.live_cooldown_seconds": true,
	"ratelimit.azure.live_cooldown_seconds": true, "ratelimit.gcp.live_cooldown_seconds": true,
	"ratelimit.providers.*.live_cooldown_seconds": true,
}
