//go:build go1.26

package cloudgaws_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/internal/yamlconf"
	"github.com/cloudg/cloudg/liveop"
	"github.com/cloudg/cloudg/resilience"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		max  *int
		mode aws.RetryMode
	}{
		{"empty", "", nil, ""},
		{"no aws section", "ratelimit:\n  aws:\n    max_retries: 4\n", nil, ""},
		{"yaml", "aws:\n  max_retries: 3\n  retry_mode: standard\nratelimit:\n  aws:\n    max_retries: 8\napp: {profile: prod}\n", new(3), aws.RetryModeStandard},
		{"sdk section alone", "aws:\n  retry_mode: standard\n", nil, aws.RetryModeStandard},
		{"json", `{"aws": {"max_retries": 0, "retry_mode": "adaptive"}, "ratelimit": {"aws": {"max_rps": 5}}}`, new(0), aws.RetryModeAdaptive},
		{"mode case and spaces", "aws:\n  retry_mode: ' Standard '\n", nil, aws.RetryModeStandard},
		{"null section", "aws:\n", nil, ""},
		{"whole float", "aws: {max_retries: 2.0, retry_mode: standard}", new(2), aws.RetryModeStandard},
		// The short form: the governor's section alone, no SDK section.
		{"short form", "aws: {max_rps: 5}\n", nil, ""},
		{"short form with max_retries", "aws: {max_rps: 5, max_retries: 3}\ngcp: {max_rps: 2}\n", nil, ""},
		{"short form, another provider", "aws: {max_retries: 3}\nproviders: {github: {max_rps: 1.4}}\n", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := cloudgaws.ParseConfig([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if (c.MaxRetries == nil) != (tc.max == nil) || (c.MaxRetries != nil && *c.MaxRetries != *tc.max) || c.RetryMode != tc.mode {
				t.Fatalf("got %+v (max %v), want max %v mode %q", c, c.MaxRetries, tc.max, tc.mode)
			}
			// The core reads the same document's ratelimit section, not
			// the aws one, and refuses none of it.
			if _, err := resilience.ParseConfig([]byte(tc.doc)); err != nil {
				t.Fatalf("the core rejects the document: %v", err)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		doc, want string
	}{
		{"aws:\n  max_retries: three\nratelimit: {}\n", `aws.max_retries: "three" is not a number`},
		{"aws:\n  max_retries: 2.5\n  retry_mode: standard\n", `aws.max_retries: "2.5" is not a whole number`},
		{"aws:\n  max_retries: -1\nratelimit: {}\n", "aws.max_retries: must be >= 0"},
		// A null number reads as the default, which no one writes it for.
		{"aws:\n  max_retries: null\n  retry_mode: standard\n", "aws.max_retries: must be a number, not null (leave the key out for the default)"},
		// A null mode too: it reads as the default, which leaving the key
		// out says, and is more likely a value lost on its way into the
		// file (retry_mode: ${AWS_RETRY_MODE}) than a choice.
		{"aws:\n  retry_mode: ~\n", "aws.retry_mode: must be a string, not null (leave the key out for the default)"},
		{"aws:\n  max_retries: 3\n  retry_mode:\n", "aws.retry_mode: must be a string, not null (leave the key out for the default)"},
		{"aws:\n  max_retries: [1]\nratelimit: {}\n", "aws.max_retries: must be a single value"},
		{"aws:\n  retry_mode: legacy\n", `aws.retry_mode: unknown retry mode "legacy" (standard or adaptive)`},
		{"aws:\n  retry_mode: 3\n", `aws.retry_mode: "3" is not a string`},
		{"aws:\n  max_retries: 1\n  max_retries: 2\n  retry_mode: standard\n", "aws.max_retries: duplicate key"},
		{"aws: [1, 2]\nratelimit: {}\n", "aws: must be a mapping"},
		{"- 1\n", "aws: must be a mapping"},
		{"aws: {max_retries: 1\n", "aws: "},
		// The section is strict: a misspelt key is not silently ignored.
		{"aws: {max_retires: 3}\nratelimit: {}\n", "aws.max_retires: unknown key (did you mean max_retries?)"},
		// max_retries alone, without a ratelimit key: either section's.
		{"aws: {max_retries: 3}\n", "aws.max_retries: ambiguous in a document without a ratelimit key"},
		{"aws: {max_retries: 3}\napp: {x: 1}\n", "aws.max_retries: ambiguous in a document without a ratelimit key"},
		{"aws: {retry_mode: standard, profile: prod}\nratelimit: {}\n", "aws.profile: unknown key"},
		// Every mistake at once.
		{"aws: {max_retries: -1, retry_mode: legacy}\n", "aws.max_retries: must be >= 0\naws.retry_mode: unknown retry mode \"legacy\" (standard or adaptive)"},
	} {
		_, err := cloudgaws.ParseConfig([]byte(tc.doc))
		var ce *yamlconf.Error
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.doc, err, tc.want)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cloudg.yaml")
	if err := os.WriteFile(path, []byte("aws:\n  max_retries: 3\n  retry_mode: standard\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := cloudgaws.LoadConfig(path)
	if err != nil || c.MaxRetries == nil || *c.MaxRetries != 3 {
		t.Fatalf("LoadConfig = %+v, %v", c, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("aws:\n  retry_mode: fast\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cloudgaws.LoadConfig(bad); err == nil || !strings.HasPrefix(err.Error(), bad+": aws.retry_mode:") {
		t.Fatalf("err = %v", err)
	}
	if _, err := cloudgaws.LoadConfig(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

// One configuration file serves every reader, in the long form (a whole
// configuration) and in the short form (the ratelimit section alone):
// resilience.LoadConfig, liveop.LoadConfig and cloudgaws.LoadConfig each
// read their own section and pass over the others'.
func TestOneFileServesEveryReader(t *testing.T) {
	type want struct {
		maxRPS, githubRPS float64
		govRetries        int // -1: unset
		sdkRetries        int // -1: unset
		mode              aws.RetryMode
		liveMax           int
		githubCooldown    float64
	}
	for _, c := range []struct {
		name, doc string
		want      want
	}{
		{"long form", `
aws:
  max_retries: 3
  retry_mode: standard
ratelimit:
  aws: {max_rps: 5, max_retries: 4}
  providers:
    github: {max_rps: 1.4, max_concurrency: 8, live_cooldown_seconds: 30}
  live_max_concurrent: 2
app: {profile: prod}
`, want{5, 1.4, 4, 3, aws.RetryModeStandard, 2, 30}},
		{"long form, JSON", `{"aws": {"max_retries": 3, "retry_mode": "standard"},
"ratelimit": {"aws": {"max_rps": 5, "max_retries": 4}, "providers": {"github": {"max_rps": 1.4, "live_cooldown_seconds": 30}}, "live_max_concurrent": 2}}`,
			want{5, 1.4, 4, 3, aws.RetryModeStandard, 2, 30}},
		{"short form", `
aws: {max_rps: 5, max_retries: 4}
providers:
  github: {max_rps: 1.4, live_cooldown_seconds: 30}
live_max_concurrent: 2
`, want{5, 1.4, 4, -1, "", 2, 30}},
		{"the README's short form", "aws: {max_rps: 5}\n", want{5, 0, -1, -1, "", 0, 0}},
		{"the SDK's section alone", "aws: {max_retries: 3, retry_mode: adaptive}\n", want{0, 0, -1, 3, aws.RetryModeAdaptive, 0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cloudg.yaml")
			if err := os.WriteFile(path, []byte(c.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			gov, err := resilience.LoadConfig(path)
			if err != nil {
				t.Fatalf("resilience.LoadConfig: %v", err)
			}
			sdk, err := cloudgaws.LoadConfig(path)
			if err != nil {
				t.Fatalf("cloudgaws.LoadConfig: %v", err)
			}
			live, err := liveop.LoadConfig(path)
			if err != nil {
				t.Fatalf("liveop.LoadConfig: %v", err)
			}
			deref := func(p *int) int {
				if p == nil {
					return -1
				}
				return *p
			}
			got := want{gov.AWS.MaxRPS, gov.Providers["github"].MaxRPS, deref(gov.AWS.MaxRetries), deref(sdk.MaxRetries),
				sdk.RetryMode, live.MaxConcurrent, live.ProviderCooldownSeconds["github"]}
			if got != c.want {
				t.Fatalf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
	// A document whose top-level aws holds max_retries alone could be
	// either section's: every reader refuses it, with the same words.
	path := filepath.Join(t.TempDir(), "cloudg.yaml")
	if err := os.WriteFile(path, []byte("aws: {max_retries: 3}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, gerr := resilience.LoadConfig(path)
	_, serr := cloudgaws.LoadConfig(path)
	_, lerr := liveop.LoadConfig(path)
	if gerr == nil || serr == nil || lerr == nil || gerr.Error() != serr.Error() || serr.Error() != lerr.Error() ||
		!strings.Contains(gerr.Error(), "aws.max_retries: ambiguous") {
		t.Fatalf("resilience %v\ncloudgaws %v\nliveop %v", gerr, serr, lerr)
	}
}
