package liveop

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudg/cloudg/internal/scopenames"
	"github.com/cloudg/cloudg/internal/yamlconf"
	"github.com/cloudg/cloudg/resilience"
)

const fullDoc = `
ratelimit:
  aws:
    max_rps: 10
    live_cooldown_seconds: 300
  gcp:
    live_cooldown_seconds: 0
  live_cooldown_seconds: 2m
  live_cooldown_after_failure: false
  live_max_concurrent: 2
  live_max_concurrent_total: 4
  live_caller_max_operations: 5
  live_caller_window_seconds: 600
  live_operation_timeout_seconds: 1800
other_section: {x: 1}
`

func TestParseConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(fullDoc))
	if err != nil {
		t.Fatal(err)
	}
	if *cfg.CooldownSeconds != 120 || *cfg.CooldownAfterFailure || cfg.MaxConcurrent != 2 ||
		cfg.MaxConcurrentTotal != 4 || cfg.CallerMaxOperations != 5 || cfg.CallerWindowSeconds != 600 ||
		cfg.OperationTimeoutSeconds != 1800 || len(cfg.ProviderCooldownSeconds) != 2 ||
		cfg.ProviderCooldownSeconds["aws"] != 300 || cfg.ProviderCooldownSeconds["gcp"] != 0 {
		t.Fatalf("parsed %+v", cfg)
	}
	s := cfg.settings()
	if s.cooldownOf("aws/123456789012") != 300*time.Second || s.cooldownOf("gcp:projects/p") != 0 ||
		s.cooldownOf("azure/sub") != 120*time.Second || s.callerWindowLabel != "600" {
		t.Fatalf("settings %+v", s)
	}
}

// The live keys sit in resilience's section: its strict reader must pass
// over every one of them, and still reject a misspelt one.
func TestResilienceReadsTheSameSection(t *testing.T) {
	rc, err := resilience.ParseConfig([]byte(fullDoc))
	if err != nil || rc.AWS.MaxRPS != 10 {
		t.Fatalf("resilience.ParseConfig: %+v, %v", rc.AWS, err)
	}
	// A misspelt live key is an error for both readers, in the same words.
	for _, c := range []struct{ doc, want string }{
		{"live_cooldown_secs: 1\n", "ratelimit.live_cooldown_secs: unknown key"},
		{"aws: {live_max_concurrent: 1}\n", "ratelimit.aws.live_max_concurrent: unknown key"},
	} {
		_, rerr := resilience.ParseConfig([]byte(c.doc))
		_, lerr := ParseConfig([]byte(c.doc))
		if rerr == nil || lerr == nil || rerr.Error() != c.want || lerr.Error() != c.want {
			t.Errorf("%q: resilience %v, liveop %v; want %s", c.doc, rerr, lerr, c.want)
		}
	}
}

// A provider name under providers that no call can go by, one that
// differs in case alone from one an imported integration knows (Acme,
// where acme's scopes say acme, as GitHub where cloudghttp's say github),
// or from another name there (myapi and MyAPI), or that has space around
// it, is refused by both readers, in the same words, one check: a
// cooldown under it would cool no scope down.
func TestAProviderNameNoCallGoesByIsRefusedAsResilienceRefusesIt(t *testing.T) {
	scopenames.Register("acme", func(service, op string) string { return "" })
	defer scopenames.Register("acme", nil)
	for _, c := range []struct{ doc, want string }{
		{"providers: {Acme: {live_cooldown_seconds: 30}}\n",
			`ratelimit.providers.Acme: "Acme" is not acme, whose calls go by ratelimit.providers.acme (provider names are case-sensitive)`},
		{"providers: {MyAPI: {live_cooldown_seconds: 2}, myapi: {live_cooldown_seconds: 5}}\n",
			`ratelimit.providers.MyAPI: "MyAPI" and "myapi" differ in case alone, and name two providers (provider names are case-sensitive): keep the one your scopes say` + "\n" +
				`ratelimit.providers.myapi: "myapi" and "MyAPI" differ in case alone, and name two providers (provider names are case-sensitive): keep the one your scopes say`},
		{"providers: {' acme': {live_cooldown_seconds: 5}}\n", "ratelimit.providers. acme: a provider name has no space around it (acme)"},
		{"providers: {AWS: {live_cooldown_seconds: 5}}\n", `ratelimit.providers.AWS: "AWS" is not aws, whose calls go by ratelimit.aws (provider names are case-sensitive)`},
	} {
		_, rerr := resilience.ParseConfig([]byte(c.doc))
		_, lerr := ParseConfig([]byte(c.doc))
		if rerr == nil || lerr == nil || rerr.Error() != c.want || lerr.Error() != c.want {
			t.Errorf("%q:\nresilience %v\nliveop     %v\nwant       %s", c.doc, rerr, lerr, c.want)
		}
	}
	// The twin whose mapping has no live key is resilience's to report.
	want := `ratelimit.providers.MyAPI: "MyAPI" and "myapi" differ in case alone, and name two providers (provider names are case-sensitive): keep the one your scopes say`
	if _, err := ParseConfig([]byte("providers: {MyAPI: {live_cooldown_seconds: 2}, myapi: {max_rps: 5}}\n")); err == nil || err.Error() != want {
		t.Errorf("one twin with a cooldown: %v, want %s", err, want)
	}
	// A Config built in code is held to the same rule.
	want = `ratelimit.providers.Acme: "Acme" is not acme, whose calls go by ratelimit.providers.acme (provider names are case-sensitive)`
	if _, err := New(Config{ProviderCooldownSeconds: map[string]float64{"Acme": 30}}); err == nil || err.Error() != want {
		t.Errorf("New: %v, want %s", err, want)
	}
	if _, err := ParseConfig([]byte("providers: {acme: {live_cooldown_seconds: 30}, MyAPI: {live_cooldown_seconds: 2}}\n")); err != nil {
		t.Errorf("acme and MyAPI: %v", err)
	}
}

func TestParseConfigDefaults(t *testing.T) {
	for _, doc := range []string{"", "ratelimit: {aws: {max_rps: 5}}\n", `{"ratelimit": {}}`, "ratelimit:\n"} {
		cfg, err := ParseConfig([]byte(doc))
		if err != nil || cfg.OperationTimeoutSeconds != 3600 || cfg.CooldownSeconds != nil || cfg.ProviderCooldownSeconds != nil {
			t.Errorf("%q: %+v, %v", doc, cfg, err)
		}
	}
	// Built in code, a Config has no timeout; from a file, 3600 s.
	if Config.settings(Config{}).operationTimeout != 0 {
		t.Fatal("a zero Config has a timeout")
	}
	s := Config{}.settings()
	if s.cooldown != 120*time.Second || !s.coolAfterFailure || s.maxPerScope != 1 || s.maxTotal != 2 ||
		s.callerMax != 0 || s.callerWindow != time.Hour || s.callerWindowLabel != "3600" {
		t.Fatalf("defaults %+v", s)
	}
}

func TestParseConfigErrorsNameTheKeyPath(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"live_max_concurrent: 0\n", "ratelimit.live_max_concurrent: must be > 0"},
		{"live_max_concurrent_total: 0\n", "ratelimit.live_max_concurrent_total: must be > 0"},
		{"live_caller_window_seconds: 0\n", "ratelimit.live_caller_window_seconds: must be > 0"},
		{"live_operation_timeout_seconds: 0\n", "ratelimit.live_operation_timeout_seconds: must be > 0"},
		{"live_operation_timeout_seconds: null\n", "ratelimit.live_operation_timeout_seconds: must be a number, not null (leave the key out for the default)"},
		{"live_max_concurrent: 1.5\n", `ratelimit.live_max_concurrent: "1.5" is not a whole number`},
		{"live_caller_max_operations: -1\n", "ratelimit.live_caller_max_operations: must be >= 0"},
		{"live_cooldown_seconds: -5\n", "ratelimit.live_cooldown_seconds: must be >= 0 (0 turns the cooldown off)"},
		{"live_cooldown_seconds: soon\n", `ratelimit.live_cooldown_seconds: malformed duration "soon" (seconds, or a duration such as 90s)`},
		{"live_cooldown_after_failure: 1\n", `ratelimit.live_cooldown_after_failure: "1" is not true or false`},
		// A null switch reads as the default, true, which a user who wrote
		// live_cooldown_after_failure: with nothing after it did not mean.
		{"live_cooldown_after_failure: ~\n", "ratelimit.live_cooldown_after_failure: must be true or false, not null (leave the key out for the default)"},
		{"ratelimit:\n  live_cooldown_after_failure:\n", "ratelimit.live_cooldown_after_failure: must be true or false, not null (leave the key out for the default)"},
		{"aws: {live_cooldown_seconds: -1}\n", "ratelimit.aws.live_cooldown_seconds: must be >= 0 (0 turns the cooldown off)"},
		{"ratelimit:\n  azure:\n    live_cooldown_seconds: [1]\n", "ratelimit.azure.live_cooldown_seconds: must be a single value"},
		{"[1]\n", "ratelimit: must be a mapping"},
		{"live_cooldown_secs: 1\n", "ratelimit.live_cooldown_secs: unknown key"},
		{"ratelimit:\n  aws:\n    max_rps: 5\n    live_max_concurrent: 1\n", "ratelimit.aws.live_max_concurrent: unknown key"},
		// Another provider's cooldown at the top of the section, as
		// resilience.ParseConfig says of it (it was read, as if under
		// providers, by this reader only).
		{"github: {live_cooldown_seconds: 5}\n", "ratelimit.github: unknown key (a provider other than aws, azure and gcp is tuned under providers: ratelimit.providers.github)"},
	} {
		_, err := ParseConfig([]byte(c.doc))
		var ye *yamlconf.Error
		if err == nil || err.Error() != c.want || !errors.As(err, &ye) {
			t.Errorf("%q: %v, want %s", c.doc, err, c.want)
		}
	}
}

func TestValidateProgrammaticConfig(t *testing.T) {
	neg := -1.0
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxConcurrent: -1}, "ratelimit.live_max_concurrent: must be >= 0"},
		{Config{OperationTimeoutSeconds: -3}, "ratelimit.live_operation_timeout_seconds: must be >= 0"},
		{Config{CooldownSeconds: &neg}, "ratelimit.live_cooldown_seconds: must be >= 0 (0 turns the cooldown off)"},
		// A name no scope's provider can have is no builtin provider's: its
		// path is under providers, as ParseConfig names it.
		{Config{ProviderCooldownSeconds: map[string]float64{"aws/1": 5}}, `ratelimit.providers.aws/1: a provider is a scope's text before its first "/" or ":"`},
		{Config{ProviderCooldownSeconds: map[string]float64{"gh:enterprise": 5}}, `ratelimit.providers.gh:enterprise: a provider is a scope's text before its first "/" or ":"`},
		// No path ends in a dot, and an empty name has no "/" or ":": said as
		// resilience's Validate says it.
		{Config{ProviderCooldownSeconds: map[string]float64{"": 5}}, "ratelimit.providers: a provider name is not empty"},
	} {
		if _, err := New(c.cfg); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %s", c.cfg, err, c.want)
		}
	}
}

// A number that is not finite, which code can set and a document cannot
// give, is refused as resilience's Validate refuses it: +Inf is >= 0, so
// the error says the number must be finite.
func TestValidateSaysANumberMustBeFinite(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{OperationTimeoutSeconds: inf}, "ratelimit.live_operation_timeout_seconds: must be a finite number >= 0"},
		{Config{CallerWindowSeconds: nan}, "ratelimit.live_caller_window_seconds: must be a finite number >= 0"},
		{Config{CooldownSeconds: &inf}, "ratelimit.live_cooldown_seconds: must be a finite number >= 0"},
		{Config{ProviderCooldownSeconds: map[string]float64{"aws": inf}}, "ratelimit.aws.live_cooldown_seconds: must be a finite number >= 0"},
		{Config{ProviderCooldownSeconds: map[string]float64{"github": nan}}, "ratelimit.providers.github.live_cooldown_seconds: must be a finite number >= 0"},
	} {
		if err := c.cfg.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %s", c.cfg, err, c.want)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cloudg.yaml")
	if err := os.WriteFile(path, []byte("ratelimit: {live_max_concurrent: 3}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := LoadConfig(path); err != nil || cfg.MaxConcurrent != 3 {
		t.Fatalf("%+v %v", cfg, err)
	}
	if err := os.WriteFile(path, []byte("live_max_concurrent: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path); err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Fatalf("got %v", err)
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v", err)
	}
}

// A document whose top-level aws is the AWS SDK's section (it holds
// retry_mode) and that has no ratelimit key leaves every default, as
// resilience.ParseConfig does.
func TestParseConfigPassesOverTheSDKSection(t *testing.T) {
	cfg, err := ParseConfig([]byte("aws: {retry_mode: standard, max_retries: 3}\n"))
	if err != nil || cfg.MaxConcurrent != 0 || cfg.OperationTimeoutSeconds != 3600 {
		t.Fatalf("%+v, %v", cfg, err)
	}
	if _, err := ParseConfig([]byte("aws: {retry_mode: standard, live_cooldown_seconds: 5}\n")); err == nil || !strings.HasPrefix(err.Error(), "aws.live_cooldown_seconds: not a setting of the AWS SDK's section") {
		t.Fatalf("a live setting beside retry_mode: %v", err)
	}
	// A live setting at the top of such a document is read by no reader
	// either: an error, for both alike, not a cooldown left at its default.
	doc := []byte("aws: {retry_mode: standard}\nlive_cooldown_seconds: 300\n")
	const want = "live_cooldown_seconds: a setting of the governor's section, which this document does not have at its top: retry_mode makes its top-level aws the AWS SDK's section; the governor's settings go under ratelimit.live_cooldown_seconds"
	_, lerr := ParseConfig(doc)
	_, rerr := resilience.ParseConfig(doc)
	if lerr == nil || rerr == nil || lerr.Error() != want || rerr.Error() != want {
		t.Errorf("%q: liveop %v, resilience %v; want %s from both", doc, lerr, rerr, want)
	}
}

// A provider other than aws, azure and gcp has its cooldown under
// providers, where resilience.ParseConfig reads its other settings and
// passes over this one.
func TestProviderCooldownUnderProviders(t *testing.T) {
	cfg, err := ParseConfig([]byte("providers: {github: {max_rps: 1.4, live_cooldown_seconds: 30}, acme: {max_rps: 2}}\naws: {live_cooldown_seconds: 60}\n"))
	if err != nil || len(cfg.ProviderCooldownSeconds) != 2 || cfg.ProviderCooldownSeconds["github"] != 30 || cfg.ProviderCooldownSeconds["aws"] != 60 {
		t.Fatalf("%+v, %v", cfg.ProviderCooldownSeconds, err)
	}
	for doc, want := range map[string]string{
		"providers: {github: {live_cooldown_seconds: -1}}\n": "ratelimit.providers.github.live_cooldown_seconds: must be >= 0 (0 turns the cooldown off)",
		"providers: {github: {live_cooldown_secs: 1}}\n":     "ratelimit.providers.github.live_cooldown_secs: unknown key",
	} {
		if _, err := ParseConfig([]byte(doc)); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", doc, err, want)
		}
	}
	// At the top of the section instead, both readers refuse it alike.
	doc := []byte("github: {live_cooldown_seconds: 5}\n")
	_, lerr := ParseConfig(doc)
	_, rerr := resilience.ParseConfig(doc)
	if lerr == nil || rerr == nil || lerr.Error() != rerr.Error() {
		t.Errorf("%q: liveop says %v, resilience %v; want the same error from both", doc, lerr, rerr)
	}
}

// A live key under a key at the top of the section that is no provider's
// is refused in resilience.ParseConfig's words, which name the key of the
// section it is a likely misspelling of before they send another
// provider under providers.
func TestMisspeltProviderWithALiveKeyIsRefusedAlike(t *testing.T) {
	for doc, want := range map[string]string{
		"awz: {live_cooldown_seconds: 5}\n":      "ratelimit.awz: unknown key (did you mean aws?)",
		"gpc: {live_cooldown_seconds: 5}\n":      "ratelimit.gpc: unknown key (did you mean gcp?)",
		"Azure: {live_cooldown_seconds: 5}\n":    "ratelimit.Azure: unknown key (did you mean azure?)",
		"AWS: {live_cooldown_seconds: 5}\n":      "ratelimit.AWS: unknown key (did you mean aws?)",
		"provider: {live_cooldown_seconds: 5}\n": "ratelimit.provider: unknown key (did you mean providers?)",
		"enabled: {live_cooldown_seconds: 5}\n":  "ratelimit.enabled: must be a single value",
		"github: {live_cooldown_seconds: 5}\n":   "ratelimit.github: unknown key (a provider other than aws, azure and gcp is tuned under providers: ratelimit.providers.github)",
	} {
		_, lerr := ParseConfig([]byte(doc))
		_, rerr := resilience.ParseConfig([]byte(doc))
		if lerr == nil || rerr == nil || lerr.Error() != want || rerr.Error() != want {
			t.Errorf("%q: liveop %v, resilience %v; want %s from both", doc, lerr, rerr, want)
		}
	}
}

// aws, azure and gcp have keys of their own: a cooldown of theirs under
// providers is refused, by both readers alike, not read (over the one
// under ratelimit.aws).
func TestBuiltinProviderUnderProvidersIsRefused(t *testing.T) {
	for _, doc := range []string{
		"providers: {gcp: {live_cooldown_seconds: 30}}\n",
		"aws: {live_cooldown_seconds: 300}\nproviders: {aws: {live_cooldown_seconds: 30}}\n",
	} {
		name := "gcp"
		if strings.HasPrefix(doc, "aws") {
			name = "aws"
		}
		want := "ratelimit.providers." + name + ": " + name + " has its own key: ratelimit." + name
		cfg, lerr := ParseConfig([]byte(doc))
		_, rerr := resilience.ParseConfig([]byte(doc))
		if lerr == nil || rerr == nil || lerr.Error() != want || rerr.Error() != want {
			t.Errorf("%q: liveop %+v %v, resilience %v; want %s from both", doc, cfg.ProviderCooldownSeconds, lerr, rerr, want)
		}
	}
}

// A provider's key, or providers, given twice with a live key in it is an
// error, as resilience.ParseConfig says of it: only the first would be
// read.
func TestDuplicateProviderWithALiveKeyIsRefused(t *testing.T) {
	for doc, want := range map[string]string{
		"aws: {live_cooldown_seconds: 5}\naws: {live_cooldown_seconds: 300}\n":                                "ratelimit.aws: duplicate key",
		"aws: {max_rps: 5}\naws: {live_cooldown_seconds: 300}\n":                                              "ratelimit.aws: duplicate key",
		"providers: {github: {live_cooldown_seconds: 5}}\nproviders: {github: {live_cooldown_seconds: 60}}\n": "ratelimit.providers: duplicate key",
		"providers: {github: {live_cooldown_seconds: 5}, github: {live_cooldown_seconds: 60}}\n":              "ratelimit.providers.github: duplicate key",
		"ratelimit:\n  gcp: {live_cooldown_seconds: 0}\n  gcp: {live_cooldown_seconds: 60}\nother: {x: 1}\n":  "ratelimit.gcp: duplicate key",
	} {
		cfg, lerr := ParseConfig([]byte(doc))
		_, rerr := resilience.ParseConfig([]byte(doc))
		if lerr == nil || rerr == nil || lerr.Error() != want || rerr.Error() != want {
			t.Errorf("%q: liveop %+v %v, resilience %v; want %s from both", doc, cfg.ProviderCooldownSeconds, lerr, rerr, want)
		}
	}
}

// A live key the section or a provider's mapping takes in through a YAML
// merge key (<<) is not read, by this reader nor by resilience.ParseConfig,
// which refuses the merge key: it is an error, in resilience's words, not
// a cooldown passed over in silence.
func TestMergedLiveKeyIsRefused(t *testing.T) {
	const base = "base: &b {live_cooldown_seconds: 7}\nratelimit:\n"
	for doc, want := range map[string]string{
		base + "  aws:\n    <<: *b\n":                     "ratelimit.aws.<<: unknown key",
		base + "  azure:\n    max_rps: 2\n    <<: [*b]\n": "ratelimit.azure.<<: unknown key",
		base + "  providers:\n    github: {<<: *b}\n":     "ratelimit.providers.github.<<: unknown key",
		base + "  <<: [*b]\n":                             "ratelimit.<<: unknown key",
		base + "  <<: *b\n":                               "ratelimit.<<: unknown key",
		// One level down: providers' mappings merged into providers,
		// or into the section.
		"base: &b {github: {live_cooldown_seconds: 7}}\nratelimit:\n  providers:\n    <<: *b\n":                             "ratelimit.providers.<<: unknown key",
		"a: &a {github: {live_cooldown_seconds: 7}}\nb: &b {acme: {max_rps: 2}}\nratelimit:\n  providers: {<<: [*b, *a]}\n": "ratelimit.providers.<<: unknown key",
		"base: &b {aws: {live_cooldown_seconds: 7}}\nratelimit:\n  <<: *b\n":                                                "ratelimit.<<: unknown key",
		"base: &b {gcp: {live_cooldown_seconds: 7}}\nratelimit:\n  <<: [*b]\n":                                              "ratelimit.<<: unknown key",
		"base: &b {providers: {github: {live_cooldown_seconds: 7}}}\nratelimit:\n  <<: *b\n":                                "ratelimit.<<: unknown key",
	} {
		cfg, lerr := ParseConfig([]byte(doc))
		_, rerr := resilience.ParseConfig([]byte(doc))
		if lerr == nil || rerr == nil || lerr.Error() != want || rerr.Error() != want {
			t.Errorf("%q: liveop %+v %v, resilience %v; want %s from both", doc, cfg.ProviderCooldownSeconds, lerr, rerr, want)
		}
	}
	// A merge key that brings in only the governor's keys is
	// resilience.ParseConfig's to refuse.
	for _, doc := range []string{
		"base: &b {max_rps: 7}\nratelimit:\n  aws: {<<: *b}\n",
		"base: &b {github: {max_rps: 7}}\nratelimit:\n  providers: {<<: *b}\n",
		"base: &b {aws: {max_rps: 7}}\nratelimit:\n  <<: *b\n",
	} {
		if _, err := ParseConfig([]byte(doc)); err != nil {
			t.Errorf("a merge of the governor's keys: %q: %v", doc, err)
		}
	}
}

// A provider name no scope can have is reported at the key path the
// document gives it.
func TestBadProviderNameUnderProvidersNamesItsPath(t *testing.T) {
	for doc, want := range map[string]string{
		"providers: {\"aws/1\": {live_cooldown_seconds: 30}}\n":         `ratelimit.providers.aws/1: a provider is a scope's text before its first "/" or ":"`,
		"providers: {\"gh:enterprise\": {live_cooldown_seconds: 30}}\n": `ratelimit.providers.gh:enterprise: a provider is a scope's text before its first "/" or ":"`,
		"providers: {\"\": {live_cooldown_seconds: 30}}\n":              "ratelimit.providers: keys must be non-empty strings",
	} {
		_, err := ParseConfig([]byte(doc))
		if err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", doc, err, want)
		}
	}
}

// Every mistake of a document is reported at once, each in the words it
// has alone, as resilience.ParseConfig reports its own; errors.As finds
// the first.
func TestParseConfigReportsEveryMistake(t *testing.T) {
	doc := `
live_cooldown_secs: 1
live_max_concurrent: 0
live_caller_max_operations: -1
aws: {live_cooldown_seconds: soon, live_max_concurrent: 1}
providers: {github: {live_cooldown_seconds: -1}}
`
	want := []string{
		"ratelimit.live_cooldown_secs: unknown key",
		"ratelimit.live_max_concurrent: must be > 0",
		"ratelimit.aws.live_max_concurrent: unknown key",
		`ratelimit.aws.live_cooldown_seconds: malformed duration "soon" (seconds, or a duration such as 90s)`,
		"ratelimit.live_caller_max_operations: must be >= 0",
		"ratelimit.providers.github.live_cooldown_seconds: must be >= 0 (0 turns the cooldown off)",
	}
	_, err := ParseConfig([]byte(doc))
	if err == nil {
		t.Fatal("no error")
	}
	if err.Error() != strings.Join(want, "\n") {
		t.Errorf("got\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
	var ye *yamlconf.Error
	if !errors.As(err, &ye) || ye.Error() != want[0] {
		t.Errorf("errors.As found %v, want %s", ye, want[0])
	}

	// Validate, for a Config built in code, reports every setting too.
	neg := -1.0
	verr := Config{MaxConcurrent: -1, CooldownSeconds: &neg}.Validate()
	if verr == nil || verr.Error() != "ratelimit.live_max_concurrent: must be >= 0\nratelimit.live_cooldown_seconds: must be >= 0 (0 turns the cooldown off)" {
		t.Errorf("Validate: %v", verr)
	}
}

// A document whose aliases expand it far beyond its size is refused by
// both readers alike, as it is read: this one, of 30 kB, expands to two
// billion nodes, and this reader's walk through its providers' mappings
// took seconds to find no live key in them.
func TestExcessiveAliasingIsRefused(t *testing.T) {
	const n = 1000
	var b strings.Builder
	b.WriteString("a: &a {")
	for i := range n {
		fmt.Fprintf(&b, "k%d: 0, ", i)
	}
	b.WriteString("}\nb: &b {")
	for i := range n {
		fmt.Fprintf(&b, "k%d: *a, ", i)
	}
	b.WriteString("}\nratelimit: {")
	for i := range n {
		fmt.Fprintf(&b, "k%d: *b, ", i)
	}
	b.WriteString("}\n")
	doc := []byte(b.String())
	const want = "ratelimit: document contains excessive aliasing (its 6008 nodes expand to 2005008008)"
	_, lerr := ParseConfig(doc)
	_, rerr := resilience.ParseConfig(doc)
	if lerr == nil || rerr == nil || lerr.Error() != want || rerr.Error() != want {
		t.Errorf("liveop %v, resilience %.200v; want %s from both", lerr, rerr, want)
	}
}

// A key is read as resilience.ParseConfig reads it: an alias key
// (*name) as the text it names, and a key that is no string (a sequence)
// as the one mistake that reader reports. An alias key made ParseConfig
// panic, and a sequence key at the top of the section added an error at
// the path "ratelimit.".
func TestKeysAreReadAsResilienceReadsThem(t *testing.T) {
	for _, c := range []struct {
		doc        string
		want       string // both readers' error, or ""
		cooldowns  string // with no error: ProviderCooldownSeconds
		liveopOnly string // with no error from resilience: this reader's
	}{
		{doc: "x: &k aws\nratelimit:\n  *k : {max_rps: 5, live_cooldown_seconds: 5}\n", cooldowns: "map[aws:5]"},
		{doc: "x: &k github\nratelimit:\n  providers: {*k : {live_cooldown_seconds: 5}}\n", cooldowns: "map[github:5]"},
		{doc: "x: &k live_cooldown_secs\nratelimit:\n  *k : 5\n", want: "ratelimit.live_cooldown_secs: unknown key"},
		{doc: "x: &k live_max_concurrent\nratelimit:\n  *k : 0\n", liveopOnly: "ratelimit.live_max_concurrent: must be > 0"},
		{doc: "? [a]\n: {live_cooldown_seconds: 5}\n", want: "ratelimit: keys must be strings"},
		{doc: "\"\": {live_cooldown_seconds: 5}\n", want: "ratelimit: keys must be non-empty strings"},
		{doc: "providers: {[a]: {live_cooldown_seconds: 5}, [b]: {live_cooldown_seconds: 6}}\n",
			want: "ratelimit.providers: keys must be non-empty strings\nratelimit.providers: keys must be non-empty strings"},
	} {
		var cfg Config
		var lerr error
		func() {
			defer func() {
				if r := recover(); r != nil {
					lerr = fmt.Errorf("panic: %v", r)
				}
			}()
			cfg, lerr = ParseConfig([]byte(c.doc))
		}()
		_, rerr := resilience.ParseConfig([]byte(c.doc))
		switch {
		case c.want != "":
			if lerr == nil || rerr == nil || lerr.Error() != c.want || rerr.Error() != c.want {
				t.Errorf("%q: liveop %v, resilience %v; want %s from both", c.doc, lerr, rerr, c.want)
			}
		case c.liveopOnly != "":
			if lerr == nil || lerr.Error() != c.liveopOnly || rerr != nil {
				t.Errorf("%q: liveop %v, resilience %v; want %s, and no error", c.doc, lerr, rerr, c.liveopOnly)
			}
		default:
			if lerr != nil || rerr != nil || fmt.Sprint(cfg.ProviderCooldownSeconds) != c.cooldowns {
				t.Errorf("%q: liveop %v %v, resilience %v; want %s", c.doc, cfg.ProviderCooldownSeconds, lerr, rerr, c.cooldowns)
			}
		}
	}
}

// A live key spelt in another case is no key of either reader: it is
// refused by this one too, in resilience.ParseConfig's words, not passed
// over in silence (the guard ran with the default it meant to change).
func TestLiveKeyInAnotherCaseIsRefused(t *testing.T) {
	for doc, want := range map[string]string{
		"LIVE_MAX_CONCURRENT: 5\n":                          "ratelimit.LIVE_MAX_CONCURRENT: unknown key",
		"ratelimit:\n  Live_Cooldown_Seconds: 30\n":         "ratelimit.Live_Cooldown_Seconds: unknown key",
		"aws: {Live_Cooldown_Seconds: 5}\n":                 "ratelimit.aws.Live_Cooldown_Seconds: unknown key",
		"providers: {github: {LIVE_COOLDOWN_SECONDS: 5}}\n": "ratelimit.providers.github.LIVE_COOLDOWN_SECONDS: unknown key",
	} {
		cfg, lerr := ParseConfig([]byte(doc))
		_, rerr := resilience.ParseConfig([]byte(doc))
		if lerr == nil || rerr == nil || lerr.Error() != want || rerr.Error() != want {
			t.Errorf("%q: liveop %+v %v, resilience %v; want %s from both", doc, cfg, lerr, rerr, want)
		}
	}
}

// A live setting directly under providers, not under a provider's name,
// is read by neither reader: it is refused by both alike, not passed over.
func TestLiveKeyDirectlyUnderProvidersIsRefused(t *testing.T) {
	for doc, want := range map[string]string{
		"providers: {live_cooldown_seconds: 5}\n":                     "ratelimit.providers.live_cooldown_seconds: must be a mapping",
		"providers: {github: {max_rps: 1}, live_max_concurrent: 2}\n": "ratelimit.providers.live_max_concurrent: must be a mapping",
	} {
		_, lerr := ParseConfig([]byte(doc))
		_, rerr := resilience.ParseConfig([]byte(doc))
		if lerr == nil || rerr == nil || lerr.Error() != want || rerr.Error() != want {
			t.Errorf("%q: liveop %v, resilience %v; want %s from both", doc, lerr, rerr, want)
		}
	}
}

// A live key in a service's mapping (a cooldown per service, which the
// guard does not have) is refused by both readers alike, not passed over
// in silence by this one: the guard would run with the provider's
// cooldown while the file says another.
func TestLiveKeyOfAServiceIsRefused(t *testing.T) {
	for doc, want := range map[string]string{
		"aws: {live_cooldown_seconds: 300, services: {ec2: {live_cooldown_seconds: 30}}}\n":   "ratelimit.aws.services.ec2.live_cooldown_seconds: unknown key",
		"providers: {github: {services: {search: {max_rps: 0.5, live_max_concurrent: 1}}}}\n": "ratelimit.providers.github.services.search.live_max_concurrent: unknown key",
		// The one live key a provider's mapping may hold, a level down.
		"providers: {github: {services: {rest: {live_cooldown_seconds: 5}}}}\n": "ratelimit.providers.github.services.rest.live_cooldown_seconds: unknown key",
		// Directly under services, not under a service's name.
		"aws:\n  services:\n    live_cooldown_seconds: 60\n": "ratelimit.aws.services.live_cooldown_seconds: must be a mapping",
	} {
		cfg, lerr := ParseConfig([]byte(doc))
		_, rerr := resilience.ParseConfig([]byte(doc))
		if lerr == nil || rerr == nil || lerr.Error() != want || rerr.Error() != want {
			t.Errorf("%q: liveop %+v %v, resilience %v; want %s from both", doc, cfg.ProviderCooldownSeconds, lerr, rerr, want)
		}
	}
}

// aws, azure or gcp under providers in another case, or with spaces, is
// another provider to both readers, which no scope of those providers has
// (the provider is the scope's text before its first "/"): a live key in
// it is refused in resilience's words, not read as the cooldown of a
// provider "AWS" that the guard never meets.
func TestBuiltinProviderInAnotherCaseUnderProvidersIsRefused(t *testing.T) {
	for doc, want := range map[string]string{
		"providers: {AWS: {live_cooldown_seconds: 30}}\n":    `ratelimit.providers.AWS: "AWS" is not aws, whose calls go by ratelimit.aws (provider names are case-sensitive)`,
		"providers: {' gcp': {live_cooldown_seconds: 30}}\n": `ratelimit.providers. gcp: " gcp" is not gcp, whose calls go by ratelimit.gcp (provider names are case-sensitive)`,
		"providers: {Azure: {live_cooldown_seconds: 30}}\n":  `ratelimit.providers.Azure: "Azure" is not azure, whose calls go by ratelimit.azure (provider names are case-sensitive)`,
	} {
		cfg, lerr := ParseConfig([]byte(doc))
		_, rerr := resilience.ParseConfig([]byte(doc))
		if lerr == nil || rerr == nil || lerr.Error() != want || rerr.Error() != want {
			t.Errorf("%q: liveop %+v %v, resilience %v; want %s from both", doc, cfg.ProviderCooldownSeconds, lerr, rerr, want)
		}
	}
}

// A key that holds a character that is not printable (a newline, a
// bidirectional override) is quoted in the key path of every error
// ParseConfig and Validate return, as package yamlconf writes it
// (yamlconf.KeyPath), so that a configuration file's key writes no line
// of its own into a log that carries the error.
func TestAKeyThatIsNotPrintableIsQuotedInErrorPaths(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"ratelimit: {\"live_x\\ny\": 1}\n", `ratelimit."live_x\ny": unknown key`},
		{"ratelimit: {providers: {\"my\\napi\": {live_cooldown_seconds: -1}}}\n", `ratelimit.providers."my\napi".live_cooldown_seconds: must be >= 0 (0 turns the cooldown off)`},
		{"ratelimit: {providers: {\"my\\napi\": {\"live_\\u202e\": 1}}}\n", `ratelimit.providers."my\napi"."live_\u202e": unknown key`},
		{"ratelimit: {aws: {services: {\"ec\\n2\": {live_x: 1}}}}\n", `ratelimit.aws.services."ec\n2".live_x: unknown key`},
		{"ratelimit: {providers: {\"a/\\nb\": {live_cooldown_seconds: 1}}}\n", `ratelimit.providers."a/\nb": ` + badProviderName},
		{"ratelimit: {providers: {\"my\\napi\": {live_cooldown_seconds: 1}, \"my\\napi\": {live_cooldown_seconds: 2}}}\n", `ratelimit.providers."my\napi": duplicate key`},
	} {
		if _, err := ParseConfig([]byte(c.doc)); err == nil || err.Error() != c.want {
			t.Errorf("%q: %q; want %q", c.doc, err, c.want)
		}
	}
	cfg := Config{ProviderCooldownSeconds: map[string]float64{"my\napi": -1}}
	if err := cfg.Validate(); err == nil || err.Error() != `ratelimit.providers."my\napi".live_cooldown_seconds: must be >= 0 (0 turns the cooldown off)` {
		t.Errorf("Validate: %q", err)
	}
}
