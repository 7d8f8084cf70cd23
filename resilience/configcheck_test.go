package resilience

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/internal/yamlconf"
)

// mistakes parses doc and returns the lines of its error, one per mistake.
func mistakes(t *testing.T, doc string) []string {
	t.Helper()
	_, err := ParseConfig([]byte(doc))
	if err == nil {
		t.Fatalf("%q: accepted", doc)
	}
	var ce *yamlconf.Error
	if !errors.As(err, &ce) {
		t.Fatalf("%q: %T is not a *yamlconf.Error", doc, err)
	}
	return strings.Split(err.Error(), "\n")
}

// wantMistakes checks that doc is refused with exactly the messages want,
// in this order.
func wantMistakes(t *testing.T, doc string, want ...string) {
	t.Helper()
	got := mistakes(t, doc)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%q:\n got %s\nwant %s", doc, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

func accepted(t *testing.T, doc string) Config {
	t.Helper()
	cfg, err := ParseConfig([]byte(doc))
	if err != nil {
		t.Errorf("%q: %v", doc, err)
	}
	return cfg
}

func TestParseConfigReportsEveryMistakeAtOnce(t *testing.T) {
	wantMistakes(t, `
ratelimit:
  aws:
    brust: 10
    max_rps: fast
    min_rps: 50
    services:
      ec2: {max_rps: 0}
      ec2.describeinstances: {max_rps: 1}
  gcp:
    max_retires: 3
    base_delay_seconds: 100s
    max_backoff_seconds: 1s
`,
		// The decoder's, in document order, then the settings' checks.
		"ratelimit.aws.brust: unknown key (did you mean burst?)",
		`ratelimit.aws.max_rps: "fast" is not a number`,
		"ratelimit.aws.services.ec2.max_rps: must be > 0",
		"ratelimit.gcp.max_retires: unknown key (did you mean max_retries?)",
		"ratelimit.aws.min_rps: 50 rps is above max_rps (20 rps, the default)",
		"ratelimit.aws.services.ec2.describeinstances: never matches: AWS operation names are PascalCase, as the SDK spells them (ec2.DescribeInstances)",
		"ratelimit.gcp.base_delay_seconds: 100 s is above max_backoff_seconds (1 s)",
	)
	// Configs built in code are validated the same way, every mistake at
	// once.
	err := Config{AWS: ProviderConfig{MaxRPS: -1}, Azure: ProviderConfig{MaxConcurrency: -2}}.Validate()
	if err == nil || err.Error() != "ratelimit.aws.max_rps: must be > 0\nratelimit.azure.max_concurrency: must be > 0" {
		t.Errorf("Validate: %v", err)
	}
}

func TestUnknownKeyHints(t *testing.T) {
	for doc, want := range map[string]string{
		"aws: {max_retires: 3}\n":           "ratelimit.aws.max_retires: unknown key (did you mean max_retries?)",
		"aws: {maxrps: 3}\n":                "ratelimit.aws.maxrps: unknown key (did you mean max_rps?)",
		"aws: {breaker_cooldown: 3}\n":      "ratelimit.aws.breaker_cooldown: unknown key",
		"awz: {max_rps: 3}\n":               "ratelimit.awz: unknown key (did you mean aws?)",
		"oracle: {}\n":                      "ratelimit.oracle: unknown key (a provider other than aws, azure and gcp is tuned under providers: ratelimit.providers.oracle)",
		"max_rps: 5\n":                      "ratelimit.max_rps: unknown key",
		"aws: {ab: 1}\n":                    "ratelimit.aws.ab: unknown key",
		"gcp: {services: {x: {bursts: 1}}}": "ratelimit.gcp.services.x.bursts: unknown key (did you mean burst?)",
	} {
		wantMistakes(t, doc, want)
	}
}

func TestMinRPSNotAboveMaxRPS(t *testing.T) {
	wantMistakes(t, "aws: {min_rps: 50, max_rps: 5}\n", "ratelimit.aws.min_rps: 50 rps is above max_rps (5 rps)")
	wantMistakes(t, "azure: {min_rps: 16}\n", "ratelimit.azure.min_rps: 16 rps is above max_rps (15 rps, the default)")
	// A service's floor is compared with the ceiling in force there: its
	// own, else its built-in one, else the provider's; an operation starts
	// from its service.
	// The ceiling the document does not write is said to be built in, or
	// the default, as the provider's is.
	wantMistakes(t, "aws: {services: {iam: {min_rps: 11}}}\n", "ratelimit.aws.services.iam.min_rps: 11 rps is above the max_rps in force here (10 rps, built in)")
	wantMistakes(t, "providers: {github: {services: {code_search: {min_rps: 0.2}}}}\n",
		"ratelimit.providers.github.services.code_search.min_rps: 0.2 rps is above the max_rps in force here (0.166 rps, built in)")
	wantMistakes(t, "aws: {services: {secretsmanager.ListSecrets: {min_rps: 21}}}\n",
		"ratelimit.aws.services.secretsmanager.ListSecrets.min_rps: 21 rps is above the max_rps in force here (20 rps, the default)")
	wantMistakes(t, "aws: {services: {iam: {max_rps: 3}, iam.ListRoles: {min_rps: 4}}}\n",
		"ratelimit.aws.services.iam.ListRoles.min_rps: 4 rps is above the max_rps in force here (3 rps)")
	wantMistakes(t, "gcp: {max_rps: 2, services: {compute: {min_rps: 3}}}\n",
		"ratelimit.gcp.services.compute.min_rps: 3 rps is above the max_rps in force here (2 rps)")
	accepted(t, "aws: {min_rps: 2, max_rps: 2}\n") // controltower's 2 rps too
	accepted(t, "aws: {services: {iam: {max_rps: 30, min_rps: 20}}}\n")
}

func TestBaseDelayNotAboveMaxBackoff(t *testing.T) {
	wantMistakes(t, "aws: {base_delay_seconds: 100s, max_backoff_seconds: 1s}\n",
		"ratelimit.aws.base_delay_seconds: 100 s is above max_backoff_seconds (1 s)")
	wantMistakes(t, "gcp: {base_delay_seconds: 61}\n",
		"ratelimit.gcp.base_delay_seconds: 61 s is above max_backoff_seconds (60 s, the default)")
	accepted(t, "aws: {base_delay_seconds: 2, max_backoff_seconds: 2}\n")
	accepted(t, "aws: {max_backoff_seconds: 0.1}\n")
}

// A breaker counts at most 1<<28 consecutive failures (its state and its
// count share a word): a breaker_threshold above that is refused, naming
// the range, rather than taken for a breaker that never opens. Before, a
// threshold of 1<<28 + 1 was accepted, and the count stopped one short.
func TestBreakerThresholdWithinBounds(t *testing.T) {
	wantMistakes(t, "aws: {breaker_threshold: 268435457}\n",
		"ratelimit.aws.breaker_threshold: 268435457 is outside [1, 268435456] (the most consecutive failures a breaker counts)")
	wantMistakes(t, "providers: {github: {breaker_threshold: 2000000000}}\n",
		"ratelimit.providers.github.breaker_threshold: 2000000000 is outside [1, 268435456] (the most consecutive failures a breaker counts)")
	accepted(t, "aws: {breaker_threshold: 268435456}\n")
	if _, err := NewGovernor(Config{GCP: ProviderConfig{BreakerThreshold: 1<<28 + 1}}); err == nil ||
		err.Error() != "ratelimit.gcp.breaker_threshold: 268435457 is outside [1, 268435456] (the most consecutive failures a breaker counts)" {
		t.Errorf("NewGovernor with breaker_threshold 1<<28 + 1: %v", err)
	}
}

func TestBreakerCooldownWithinBounds(t *testing.T) {
	for _, v := range []string{"0.5", "601", "1h"} {
		got := mistakes(t, "aws: {breaker_cooldown_seconds: "+v+"}\n")
		if len(got) != 1 || !strings.HasPrefix(got[0], "ratelimit.aws.breaker_cooldown_seconds: ") || !strings.HasSuffix(got[0], " s is outside [1 s, 600 s]") {
			t.Errorf("cooldown %s: %v", v, got)
		}
	}
	wantMistakes(t, "azure: {breaker_cooldown_seconds: 120, breaker_max_cooldown_seconds: 100}\n",
		"ratelimit.azure.breaker_cooldown_seconds: 120 s is above breaker_max_cooldown_seconds (100 s)")
	accepted(t, "aws: {breaker_cooldown_seconds: 1}\n")
	accepted(t, "aws: {breaker_cooldown_seconds: 10m}\n")
	accepted(t, "aws: {breaker_cooldown_seconds: 30, breaker_max_cooldown_seconds: 3600}\n")
}

// A breaker_max_cooldown_seconds below the cooldown it caps, left at its
// default of 60 s, is refused, as docs/configuration.md's "An unset one is
// compared at its default" says: the breaker would raise the cap to the
// cooldown and keep every scope shut for 60 s, the setting silently
// ignored.
func TestBreakerMaxCooldownBelowTheDefaultCooldown(t *testing.T) {
	wantMistakes(t, "aws: {breaker_max_cooldown_seconds: 30}\n",
		"ratelimit.aws.breaker_max_cooldown_seconds: 30 s is below breaker_cooldown_seconds (60 s, the default): set breaker_cooldown_seconds at or below it")
	err := Config{Providers: map[string]ProviderConfig{"github": {BreakerMaxCooldownSeconds: 10}}}.Validate()
	if err == nil || err.Error() != "ratelimit.providers.github.breaker_max_cooldown_seconds: 10 s is below breaker_cooldown_seconds (60 s, the default): set breaker_cooldown_seconds at or below it" {
		t.Errorf("Validate: %v", err)
	}
	accepted(t, "aws: {breaker_max_cooldown_seconds: 60}\n")
	accepted(t, "aws: {breaker_cooldown_seconds: 10, breaker_max_cooldown_seconds: 30}\n")
}

func TestBurstsHoldAWholeTokenAndNeedARate(t *testing.T) {
	wantMistakes(t, "aws: {global_max_rps: 100, global_burst: 0.5}\n",
		"ratelimit.aws.global_burst: must be >= 1 when global_max_rps is set (a bucket holds at least one token)")
	wantMistakes(t, "aws: {account_max_rps: 10, account_burst: 0.5}\n",
		"ratelimit.aws.account_burst: must be >= 1 when account_max_rps is set (a bucket holds at least one token)")
	// Azure's account bucket is on by default (20 rps).
	wantMistakes(t, "azure: {account_burst: 0.25}\n",
		"ratelimit.azure.account_burst: must be >= 1 when account_max_rps is set (a bucket holds at least one token)")
	wantMistakes(t, "aws: {global_burst: 50}\n", "ratelimit.aws.global_burst: has no effect: global_max_rps is 0 (the bucket is off)")
	wantMistakes(t, "aws: {account_burst: 50}\n", "ratelimit.aws.account_burst: has no effect: account_max_rps is 0 (the bucket is off)")
	wantMistakes(t, "azure: {account_max_rps: 0, account_burst: 50}\n", "ratelimit.azure.account_burst: has no effect: account_max_rps is 0 (the bucket is off)")
	wantMistakes(t, "aws: {burst: 0.5}\n", "ratelimit.aws.burst: must be >= 1 (a bucket holds at least one token)")
	wantMistakes(t, "aws: {services: {ec2: {burst: 0.5}}}\n", "ratelimit.aws.services.ec2.burst: must be >= 1 (a bucket holds at least one token)")
	accepted(t, "aws: {global_max_rps: 100, global_burst: 1, account_max_rps: 10}\n")
	accepted(t, "azure: {account_burst: 300}\n")
}

func TestAWSOverrideKeysThatNeverMatch(t *testing.T) {
	wantMistakes(t, "aws: {services: {ec2.describeinstances: {max_rps: 5}}}\n",
		"ratelimit.aws.services.ec2.describeinstances: never matches: AWS operation names are PascalCase, as the SDK spells them (ec2.DescribeInstances)")
	wantMistakes(t, "aws: {services: {EC2.DescribeInstances: {max_rps: 5}}}\n",
		"ratelimit.aws.services.EC2.DescribeInstances: never matches: AWS service names are lower case, as botocore spells them (ec2.DescribeInstances)")
	wantMistakes(t, "aws: {services: {SecretsManager: {max_rps: 5}}}\n",
		"ratelimit.aws.services.SecretsManager: never matches: AWS service names are lower case, as botocore spells them (secretsmanager)")
	accepted(t, "aws: {services: {ec2.DescribeInstances: {max_rps: 5}, cognito-idp: {max_rps: 2}}}\n")
	// Other providers' operations are spelt otherwise (Google's REST
	// operations are instances_get), so only AWS keys are checked.
	accepted(t, "gcp: {services: {compute.instances_get: {max_rps: 5}}}\nazure: {services: {network.x: {max_rps: 5}}}\n")
}

// One document holds the governor's section and the AWS SDK's: each
// reader reads its own and passes over the other's.
func TestOneDocumentHoldsBothSections(t *testing.T) {
	cfg := accepted(t, "aws:\n  max_retries: 3\n  retry_mode: standard\nratelimit:\n  aws:\n    max_retries: 5\napp: {anything: 1}\n")
	if *cfg.AWS.MaxRetries != 5 {
		t.Errorf("ratelimit.aws.max_retries %d, want 5", *cfg.AWS.MaxRetries)
	}
	// Without a ratelimit key, an aws section holding retry_mode is the
	// SDK's: the governor keeps every default.
	for _, doc := range []string{"aws: {retry_mode: standard}\n", "aws: {retry_mode: adaptive, max_retries: 3}\napp: {x: 1}\n", `{"aws": {"retry_mode": "standard"}}`} {
		if cfg := accepted(t, doc); cfg.AWS.MaxRetries != nil || cfg.AWS.MaxRPS != 0 {
			t.Errorf("%q: %+v, want the defaults", doc, cfg.AWS)
		}
	}
	// A governor setting beside retry_mode would be read by neither.
	wantMistakes(t, "aws: {retry_mode: standard, max_rps: 5}\n",
		"aws.max_rps: not a setting of the AWS SDK's section, which retry_mode makes this top-level aws (max_retries, retry_mode); the governor's settings go under ratelimit.aws")
	// Nor would a key at the top that only the governor's section has:
	// there is no such section at the top of this document.
	wantMistakes(t, "aws: {retry_mode: standard, max_retries: 3}\nproviders: {github: {max_rps: 1}}\nlive_cooldown_seconds: 300\napp: {x: 1}\n",
		"providers: a setting of the governor's section, which this document does not have at its top: retry_mode makes its top-level aws the AWS SDK's section; the governor's settings go under ratelimit.providers",
		"live_cooldown_seconds: a setting of the governor's section, which this document does not have at its top: retry_mode makes its top-level aws the AWS SDK's section; the governor's settings go under ratelimit.live_cooldown_seconds")
	// Without retry_mode, a governor key makes it the section itself.
	if cfg := accepted(t, "aws: {max_retries: 3, max_rps: 5}\n"); *cfg.AWS.MaxRetries != 3 {
		t.Errorf("the section alone: %+v", cfg.AWS)
	}
	if cfg := accepted(t, "aws: {max_retries: 3}\ngcp: {max_rps: 5}\n"); *cfg.AWS.MaxRetries != 3 || cfg.GCP.MaxRPS != 5 {
		t.Errorf("the section alone: %+v", cfg)
	}
}

// A top-level key that names a section (ratelimit, and the SDK's aws
// beside it) is refused when it is there twice, as every duplicate key
// is: the readers took the first and passed over the second in silence.
func TestDuplicateSectionKeys(t *testing.T) {
	wantMistakes(t, "ratelimit: {aws: {max_rps: 5}}\nratelimit: {aws: {max_rps: 50}}\n", "ratelimit: duplicate key")
	wantMistakes(t, "aws: {retry_mode: standard}\naws: {max_rps: 5}\n", "aws: duplicate key")
	wantMistakes(t, "ratelimit: {}\naws: {retry_mode: standard}\naws: {retry_mode: adaptive}\n", "aws: duplicate key")
	// The short form's aws is the section's own key, which the decoder
	// reports.
	wantMistakes(t, "aws: {max_rps: 5}\naws: {max_rps: 50}\n", "ratelimit.aws: duplicate key")
}

// A provider's min_rps is the floor of every leaf of the provider, the
// built-in services' and operations' included, as the specification has
// it ("never below the provider's min_rps"); one above a built-in
// service's rate (aws controltower, 2 rps), which the document does not
// write, is that service's floor at its rate, where a throttle does not
// slow it (the nearest the leaf comes to the floor asked for), as a
// min_rps equal to the rate is. It is no error: a built-in rate the user
// never wrote does not make their configuration wrong, nor does one that
// a release adds (github's code_search, 0.166 rps, under a github min_rps
// of 0.5 that was accepted before it was built in). The same holds of a
// service's min_rps over its built-in operations (gcp
// cloudasset.ListAssets). What the document writes inconsistent is
// refused: a max_rps it sets below a min_rps it sets.
func TestAFloorAboveABuiltInRateIsThatRate(t *testing.T) {
	for _, doc := range []string{
		"providers: {github: {min_rps: 0.5}}\n",
		"aws: {min_rps: 6}\n",
		"gcp: {services: {cloudasset: {min_rps: 2}}}\n",
		"azure: {min_rps: 0.5, services: {storage: {burst: 5}}}\n",
	} {
		accepted(t, doc)
	}
	for _, c := range []struct {
		doc, provider string
		floors        map[string]float64 // service or service.Operation -> floor
	}{
		{"providers: {github: {min_rps: 0.5}}\n", "github", map[string]float64{"code_search": 0.166, "search": 0.5, "rest": 0.5}},
		{"aws: {min_rps: 6}\n", "aws", map[string]float64{"controltower": 2, "organizations": 5, "iam": 6, "secretsmanager": 6}},
		{"gcp: {services: {cloudasset: {min_rps: 2}}}\n", "gcp", map[string]float64{"cloudasset.ListAssets": 1.5, "cloudasset.SearchAllResources": 2}},
	} {
		g := newGov(t, accepted(t, c.doc))
		for k, want := range c.floors {
			svc, op, _ := strings.Cut(k, ".")
			if sp := g.provider(c.provider).set.leafSpec(Scope{Service: svc, Operation: op}); sp.Floor != want || sp.Floor > sp.Rate {
				t.Errorf("%s %s: %+v, want floor %v", c.provider, k, sp, want)
			}
		}
	}
	// What the document writes inconsistent is refused.
	wantMistakes(t, "aws: {min_rps: 3, services: {controltower: {max_rps: 2}}}\n",
		"ratelimit.aws.services.controltower.max_rps: 2 rps is below the floor of the adaptive rate in force here (3 rps, ratelimit.aws.min_rps): set min_rps here at or below it to go this low")
	// An entry that gives the built-in service a floor or a ceiling of its
	// own is what holds there.
	accepted(t, "aws: {min_rps: 3, services: {controltower: {min_rps: 1}}}\n")
	accepted(t, "aws: {min_rps: 3, services: {controltower: {max_rps: 4}}}\n")
	accepted(t, "gcp: {services: {cloudasset: {min_rps: 2}, cloudasset.ListAssets: {min_rps: 1}}}\n")
	// A service's floor above its own ceiling is reported once, at its
	// key: it, not the provider's, is its operations' floor.
	wantMistakes(t, "gcp: {min_rps: 2, services: {cloudasset: {min_rps: 11}}}\n",
		"ratelimit.gcp.services.cloudasset.min_rps: 11 rps is above the max_rps in force here (10 rps, the default)")
	// What a user sees: under aws: {min_rps: 6}, a throttle leaves
	// controltower at its 2 rps, and halves iam from 10 to its floor, 6.
	g := newGov(t, accepted(t, "aws: {min_rps: 6}\n"))
	for svc, want := range map[string]float64{"controltower": 2, "iam": 6} {
		sc := Scope{Provider: "aws", Account: "123456789012", Service: svc}
		n := 0
		Do(context.Background(), sc, failing(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		if r := rate(g, sc); r != want {
			t.Errorf("%s after a throttle: %v rps, want %v", svc, r, want)
		}
	}
	// Where the floor is below the built-in rate, the leaf's rate falls on
	// a throttle.
	cfg := accepted(t, "aws: {min_rps: 1}\n")
	sp := newGov(t, cfg).provider("aws").set.leafSpec(Scope{Service: "controltower"})
	if sp.Floor != 1 || sp.Rate != 2 {
		t.Errorf("controltower: %+v, want rate 2 floor 1", sp)
	}
}

// A document without a ratelimit key whose top level has a likely
// misspelling of it (RateLimit, ratelimits, rate_limit) is refused,
// naming the key it is near: beside the SDK's aws section it was passed
// over as another program's section, and every governor setting under it
// ignored in silence; as the short form's key it was said to be another
// provider, to be moved under providers.
func TestAMisspeltRatelimitKeyIsRefused(t *testing.T) {
	for _, key := range []string{"ratelimits", "RateLimit", "rate_limit", "ratelimt", "Rate-Limits"} {
		wantMistakes(t, "aws: {max_retries: 3, retry_mode: standard}\n"+key+": {aws: {max_rps: 5}}\napp: {x: 1}\n",
			key+": unknown key (did you mean ratelimit?)")
		wantMistakes(t, key+": {aws: {max_rps: 5}}\n",
			"ratelimit."+key+": unknown key (did you mean ratelimit?)")
	}
	// A program's own section further from it is another section.
	if cfg := accepted(t, "aws: {max_retries: 3, retry_mode: standard}\nratelimiter: {x: 1}\n"); cfg.AWS.MaxRPS != 0 {
		t.Errorf("beside the SDK's section: %+v", cfg.AWS)
	}
	// Beside a ratelimit key, the document's other keys are other
	// sections, whatever their names.
	if cfg := accepted(t, "ratelimit: {aws: {max_rps: 5}}\nratelimiter: {x: 1}\n"); cfg.AWS.MaxRPS != 5 {
		t.Errorf("long form: %+v", cfg.AWS)
	}
}

// The goodput controller chooses how an adaptive leaf reacts to
// throttling: beside adaptive: false, which keeps the leaf rates fixed,
// it has no effect, and is refused as a burst whose bucket is off is,
// rather than ignored in silence.
func TestGoodputControllerNeedsAnAdaptiveLeaf(t *testing.T) {
	wantMistakes(t, "aws: {adaptive: false, controller: goodput}\n",
		"ratelimit.aws.controller: has no effect: adaptive is false (the leaf rates are fixed)")
	fixed := false
	err := Config{Providers: map[string]ProviderConfig{"github": {Adaptive: &fixed, Controller: "goodput"}}}.Validate()
	if err == nil || err.Error() != "ratelimit.providers.github.controller: has no effect: adaptive is false (the leaf rates are fixed)" {
		t.Errorf("Validate: %v", err)
	}
	// aimd, the default, names what fixed rates leave out anyway.
	accepted(t, "aws: {adaptive: false, controller: aimd}\n")
	accepted(t, "aws: {adaptive: true, controller: goodput}\n")
}

// A provider name or a service key with space around a name is refused:
// it would tune a provider or a service no integration's scope names,
// and the settings under it would be ignored in silence (aws's service
// keys are checked against the SDK's names only where cloudgaws is
// imported, and other providers' not at all).
func TestSpaceAroundANameIsRefused(t *testing.T) {
	wantMistakes(t, "aws: {services: {' ec2': {max_rps: 1}, 'iam ': {max_rps: 1}}}\n",
		"ratelimit.aws.services. ec2: a service key has no space around its names (ec2)",
		"ratelimit.aws.services.iam : a service key has no space around its names (iam)")
	wantMistakes(t, "providers: {' github': {max_rps: 1}, acme: {services: {'orders. List': {max_rps: 1}}}}\n",
		"ratelimit.providers. github: a provider name has no space around it (github)",
		"ratelimit.providers.acme.services.orders. List: a service key has no space around its names (orders.List)")
	accepted(t, "providers: {github: {services: {rest: {max_rps: 1}}}, acme: {services: {orders.List: {max_rps: 1}}}}\n")
}

// An explicit empty string where a setting takes a name (controller: "")
// is refused, as an explicit zero rate is: it reads as the default, which
// the key left out says, and is more likely a value lost on its way into
// the file (controller: ${CONTROLLER}) than a choice.
func TestAnEmptyNameIsRefused(t *testing.T) {
	wantMistakes(t, "aws: {controller: ''}\n", "ratelimit.aws.controller: must not be empty (leave the key out for the default)")
	wantMistakes(t, `{"ratelimit": {"providers": {"github": {"controller": ""}}}}`, "ratelimit.providers.github.controller: must not be empty (leave the key out for the default)")
}

// An explicit null where a setting takes a number (max_rps: ~, max_rps:
// with nothing after it, "max_rps": null) is refused, as an explicit zero
// rate and an empty name are: it reads as the default, which the key left
// out says, so a user who wrote it meant something else: no limit, a
// bucket or a budget turned off, or a value lost on its way into the file
// (max_rps: ${MAX_RPS}, an unset variable). A null section or service
// (aws: with every key under it commented out) is still an empty one.
func TestAnExplicitNullNumberIsRefused(t *testing.T) {
	wantMistakes(t, "aws: {max_rps: ~}\n", "ratelimit.aws.max_rps: must be a number, not null (leave the key out for the default)")
	wantMistakes(t, "aws:\n  services:\n    ec2:\n      max_rps:\n", "ratelimit.aws.services.ec2.max_rps: must be a number, not null (leave the key out for the default)")
	wantMistakes(t, `{"ratelimit": {"gcp": {"retry_budget": null, "deadline_seconds": null}}}`,
		"ratelimit.gcp.retry_budget: must be a number, not null (leave the key out for the default)",
		"ratelimit.gcp.deadline_seconds: must be a number, not null (leave the key out for the default)")
	// Where 0 turns a thing off, the message says so.
	wantMistakes(t, "azure: {account_max_rps: ~}\n", "ratelimit.azure.account_max_rps: must be a number, not null (leave the key out for the default; 0 turns the bucket off)")
	wantMistakes(t, "providers: {github: {max_concurrency: null}}\n", "ratelimit.providers.github.max_concurrency: must be a number, not null (leave the key out for the default)")
	accepted(t, "aws: ~\nazure:\ngcp: {services: {cloudasset: ~}}\nproviders: {github: ~}\n")
}

// An explicit null where a setting takes true or false or a name
// (enabled: ~, enabled: with nothing after it, controller: ~) is refused,
// as a null number is: it reads as the default, which the key left out
// says, and a user who wrote it meant another thing. enabled:, adaptive:
// or per_operation: with nothing after it reads as "no" to a reader but
// as the default, true (or ec2's per operation), to the decoder; a null
// breaker_wait is more likely a value lost on its way into the file
// (breaker_wait: ${WAIT}) than a choice; controller: ~ is no controller
// to a reader, which fixed rates (adaptive: false) are, not aimd's; and
// an unset ${CONTROLLER} leaves controller: with nothing after it, the
// null, not "", that TestAnEmptyNameIsRefused refuses.
func TestAnExplicitNullSwitchOrNameIsRefused(t *testing.T) {
	wantMistakes(t, "enabled: ~\n", "ratelimit.enabled: must be true or false, not null (leave the key out for the default)")
	wantMistakes(t, "ratelimit:\n  enabled:\n  aws: {max_rps: 5}\n", "ratelimit.enabled: must be true or false, not null (leave the key out for the default)")
	wantMistakes(t, "aws:\n  enabled:\n  adaptive: null\n  breaker_wait: ~\n  per_operation:\n",
		"ratelimit.aws.enabled: must be true or false, not null (leave the key out for the default)",
		"ratelimit.aws.adaptive: must be true or false, not null (leave the key out for the default)",
		"ratelimit.aws.breaker_wait: must be true or false, not null (leave the key out for the default)",
		"ratelimit.aws.per_operation: must be true or false, not null (leave the key out for the default)")
	wantMistakes(t, "aws: {services: {ec2: {per_operation: ~}}}\n", "ratelimit.aws.services.ec2.per_operation: must be true or false, not null (leave the key out for the default)")
	wantMistakes(t, "aws: {controller: ~}\n", "ratelimit.aws.controller: must be a string, not null (leave the key out for the default)")
	wantMistakes(t, `{"ratelimit": {"providers": {"github": {"controller": null}}}}`, "ratelimit.providers.github.controller: must be a string, not null (leave the key out for the default)")
	// A null section, service or provider is still an empty one.
	accepted(t, "aws: ~\nproviders: ~\ngcp: {services: ~}\n")
}

// A provider's or a service's name that holds a character that is not
// printable (a newline) is quoted in the key path of Validate's errors,
// as the decoder quotes a document's key (yamlconf.KeyPath), so that a
// configuration file's key, or a Config's map key, writes no line of its
// own into a log that carries the error.
func TestANameThatIsNotPrintableIsQuotedInValidatesPaths(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"ratelimit: {providers: {\"my\\napi\": {max_rps: 1, min_rps: 2}}}\n", `ratelimit.providers."my\napi".min_rps: 2 rps is above max_rps (1 rps)`},
		{"ratelimit: {aws: {services: {\"ec\\n2\": {max_rps: 1, min_rps: 2}}}}\n", `ratelimit.aws.services."ec\n2".min_rps: 2 rps is above the max_rps in force here (1 rps)`},
		{"ratelimit: {aws: {services: {\"ec\\n2\": {burst: 0.5}}}}\n", `ratelimit.aws.services."ec\n2".burst: must be >= 1 (a bucket holds at least one token)`},
		{"ratelimit: {aws: {services: {\"ec2. \\nDescribe\": {max_rps: 1}}}}\n", `ratelimit.aws.services."ec2. \nDescribe": a service key has no space around its names (ec2.Describe)`},
	} {
		if _, err := ParseConfig([]byte(c.doc)); err == nil || err.Error() != c.want {
			t.Errorf("%q: %q; want %q", c.doc, err, c.want)
		}
	}
}
