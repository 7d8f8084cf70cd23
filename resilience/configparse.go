package resilience

import (
	"errors"

	"github.com/cloudg/cloudg/internal/yamlconf"
)

// ParseConfig reads the ratelimit section from YAML or JSON. The top-level
// keys are enabled, aws, azure and gcp; a document with a top-level
// ratelimit key is read as that section (its other top-level keys belong to
// other sections and are ignored), and so is a document whose top-level aws
// holds retry_mode, the AWS SDK's section (package cloudgaws reads it):
// one without a ratelimit key leaves every default. Unknown keys, explicit
// zero or negative rates, bursts, thresholds and times, malformed values
// and settings that contradict each other (see Config.Validate) are
// errors that name the key path, all of a document's at once (joined with
// errors.Join; errors.As finds the first *yamlconf.Error), such as
//
//	ratelimit.aws.services.ec2.brust: unknown key (did you mean burst?)
//	ratelimit.aws.min_rps: 50 rps is above max_rps (5 rps)
//
// Keys ending in _seconds take a number of seconds or a Go duration string
// ("90s", "1m30s"). An empty document is the zero Config.
//
// The live_* keys of the section (live_cooldown_seconds and the others at
// the top level, live_cooldown_seconds under aws, azure and gcp) configure
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

// configDecoder decodes the ratelimit section; the keys it lists as
// Positive must be positive when they are given at all, and the paths it
// skips are package liveop's.
var configDecoder = yamlconf.Decoder{Positive: map[string]bool{
	"max_rps": true, "burst": true, "min_rps": true, "global_burst": true, "account_burst": true,
	"max_concurrency": true, "breaker_threshold": true, "breaker_cooldown_seconds": true,
	"breaker_max_cooldown_seconds": true, "base_delay_seconds": true, "max_backoff_seconds": true,
	"deadline_seconds": true,
}, Skip: liveKeys}

// liveKeys are the key paths of the section that package liveop owns.
var liveKeys = map[string]bool{
	"ratelimit.live_cooldown_seconds": true, "ratelimit.live_cooldown_after_failure": true,
	"ratelimit.live_max_concurrent": true, "ratelimit.live_max_concurrent_total": true,
	"ratelimit.live_caller_max_operations": true, "ratelimit.live_caller_window_seconds": true,
	"ratelimit.live_operation_timeout_seconds": true, "ratelimit.aws.live_cooldown_seconds": true,
	"ratelimit.azure.live_cooldown_seconds": true, "ratelimit.gcp.live_cooldown_seconds": true,
}
