//go:build go1.26

package resilience

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/cloudg/cloudg/internal/scopenames"
	"github.com/cloudg/cloudg/internal/yamlconf"
)

// A provider other than aws, azure and gcp (github, which cloudghttp
// governs) is tuned under providers, with every setting of the three, and
// applied wherever the provider's scopes are: the leaf, the cap, the
// retries, the budget; Configure reconfigures it as it does the three.
func TestOtherProvidersAreConfigurable(t *testing.T) {
	cfg := accepted(t, `
providers:
  github:
    max_rps: 1.4
    burst: 3
    max_concurrency: 8
    max_retries: 2
    retry_budget: 50
    services:
      search: {max_rps: 0.5, min_rps: 0.1}
`)
	gh := cfg.Providers["github"]
	if gh.MaxRPS != 1.4 || gh.Burst != 3 || gh.MaxConcurrency != 8 || *gh.MaxRetries != 2 || gh.Services["search"].MaxRPS != 0.5 {
		t.Fatalf("parsed %+v", gh)
	}
	g := newGov(t, cfg)
	if s := g.Inspect(githubRest); s.Leaf.Rate != 1.4 || s.Leaf.Tokens != 3 {
		t.Errorf("github leaf before any call: %+v", s.Leaf)
	}
	search := githubRest
	search.Service, search.Operation = "search", ""
	if s := g.Inspect(search); s.Leaf.Rate != 0.5 || s.Leaf.Tokens != 1 {
		t.Errorf("github search leaf before any call: %+v", s.Leaf) // a service's own ceiling, not the provider's
	}
	if b := g.Budget("github"); b != 50 {
		t.Errorf("github budget %v, want 50", b)
	}
	if err := Do(context.Background(), githubRest, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
		t.Fatal(err)
	}
	p := generic(g, "github")
	if p == nil || p.set.leaf.Rate != 1.4 || p.set.bulkhead != 8 || p.set.retry.attempts != 3 || p.set.budget != 50 {
		t.Fatalf("github settings %+v", p)
	}
	if sp := p.set.leafSpec(search); sp.Rate != 0.5 || sp.Floor != 0.1 {
		t.Errorf("github search leaf %+v", sp)
	}
	if pol := g.Policy("github"); pol.MaxAttempts != 3 {
		t.Errorf("github policy %+v", pol)
	}
	// Another provider keeps the generic defaults.
	if s := g.Inspect(Scope{Provider: "acme", Service: "orders"}); s.Leaf.Rate != 20 {
		t.Errorf("acme leaf %+v", s.Leaf)
	}
	// The same configuration again keeps the provider as it is; a change
	// reconfigures the provider already made.
	if err := g.Configure(cfg); err != nil || generic(g, "github") != p {
		t.Fatalf("the same configuration replaced the provider: %v", err)
	}
	cfg.Providers["github"] = ProviderConfig{MaxRPS: 2}
	if err := g.Configure(cfg); err != nil {
		t.Fatal(err)
	}
	if q := generic(g, "github"); q == p || q.set.leaf.Rate != 2 || q.set.bulkhead != 64 {
		t.Fatalf("after Configure: %+v", q.set)
	}
	if s := g.Inspect(githubRest); s.Leaf.Ceiling != 2 {
		t.Errorf("github leaf after Configure: %+v", s.Leaf)
	}
}

func TestProvidersKeys(t *testing.T) {
	wantMistakes(t, "providers: {aws: {max_rps: 5}, gcp: {}}\n",
		"ratelimit.providers.aws: aws has its own key: ratelimit.aws",
		"ratelimit.providers.gcp: gcp has its own key: ratelimit.gcp")
	// aws, azure or gcp in another case, or with spaces, is another
	// provider to the governor, which no integration's call uses.
	wantMistakes(t, "providers: {AWS: {max_rps: 5}, ' gcp': {}, Azure: {}}\n",
		`ratelimit.providers. gcp: " gcp" is not gcp, whose calls go by ratelimit.gcp (provider names are case-sensitive)`,
		`ratelimit.providers.AWS: "AWS" is not aws, whose calls go by ratelimit.aws (provider names are case-sensitive)`,
		`ratelimit.providers.Azure: "Azure" is not azure, whose calls go by ratelimit.azure (provider names are case-sensitive)`)
	wantMistakes(t, "providers: {github: {max_rsp: 5}}\n", "ratelimit.providers.github.max_rsp: unknown key (did you mean max_rps?)")
	wantMistakes(t, "providers: {github: {max_rps: 0, max_retries: -1}}\n",
		"ratelimit.providers.github.max_rps: must be > 0", "ratelimit.providers.github.max_retries: must be >= 0")
	wantMistakes(t, "providers: {github: {min_rps: 50}}\n", "ratelimit.providers.github.min_rps: 50 rps is above max_rps (20 rps, the default)")
	wantMistakes(t, "providers: [github]\n", "ratelimit.providers: must be a mapping")
	// A provider's settings at the top of the section: the hint says where
	// they go.
	wantMistakes(t, "github: {max_rps: 1.4}\n",
		"ratelimit.github: unknown key (a provider other than aws, azure and gcp is tuned under providers: ratelimit.providers.github)")
	// Configs built in code are checked alike.
	err := Config{Providers: map[string]ProviderConfig{"": {}, "azure": {}, "acme": {Burst: -1}}}.Validate()
	want := "ratelimit.providers: a provider name is not empty\nratelimit.providers.acme.burst: must be > 0\nratelimit.providers.azure: azure has its own key: ratelimit.azure"
	if err == nil || err.Error() != want {
		t.Errorf("Validate:\n got %v\nwant %s", err, want)
	}
	// A provider's live_cooldown_seconds is package liveop's.
	accepted(t, "providers: {github: {max_rps: 1.4, live_cooldown_seconds: 30}}\n")
	wantMistakes(t, "providers: {github: {live_max_concurrent: 3}}\n", "ratelimit.providers.github.live_max_concurrent: unknown key")
	// JSON too.
	if cfg := accepted(t, `{"ratelimit": {"providers": {"github": {"max_rps": 1.4}}}}`); cfg.Providers["github"].MaxRPS != 1.4 {
		t.Errorf("json: %+v", cfg.Providers)
	}
}

// A rate that cannot serve a call is refused: a ceiling under a floor of
// the adaptive rate that the user set (min_rps), and any rate whose tokens
// come no more often than once per deadline, where every call that waits for
// one would be refused. A ceiling under the default floor lowers the floor
// with it (TestAQuotaOfFifteenAnHourNeedsOnlyItsMaxRPS).
func TestImplausibleRates(t *testing.T) {
	wantMistakes(t, "aws: {max_rps: 1e-9}\n",
		"ratelimit.aws.max_rps: 1e-09 rps is a token every 1e+09 s, longer than deadline_seconds (900 s, the default): a call that waits for one would be refused; set it to 0.00112 rps or more, or ratelimit.aws.deadline_seconds to 1.01e+09 s or more")
	wantMistakes(t, "gcp: {max_rps: 1e-9, min_rps: 1e-9}\n",
		"ratelimit.gcp.max_rps: 1e-09 rps is a token every 1e+09 s, longer than deadline_seconds (900 s, the default): a call that waits for one would be refused; set it to 0.00112 rps or more, or ratelimit.gcp.deadline_seconds to 1.01e+09 s or more",
		"ratelimit.gcp.min_rps: 1e-09 rps is a token every 1e+09 s, longer than deadline_seconds (900 s, the default): a call that waits for one would be refused; set it to 0.00112 rps or more, or ratelimit.gcp.deadline_seconds to 1.01e+09 s or more")
	wantMistakes(t, "aws: {max_rps: 0.01, min_rps: 0.01, deadline_seconds: 60}\n",
		"ratelimit.aws.max_rps: 0.01 rps is a token every 100 s, longer than deadline_seconds (60 s): a call that waits for one would be refused; set it to 0.0167 rps or more, or ratelimit.aws.deadline_seconds to 101 s or more",
		"ratelimit.aws.min_rps: 0.01 rps is a token every 100 s, longer than deadline_seconds (60 s): a call that waits for one would be refused; set it to 0.0167 rps or more, or ratelimit.aws.deadline_seconds to 101 s or more")
	wantMistakes(t, "azure: {global_max_rps: 1e-6, account_max_rps: 0.0001}\n",
		"ratelimit.azure.global_max_rps: 1e-06 rps is a token every 1e+06 s, longer than deadline_seconds (900 s, the default): a call that waits for one would be refused; set it to 0.00112 rps or more, or ratelimit.azure.deadline_seconds to 1.01e+06 s or more",
		"ratelimit.azure.account_max_rps: 0.0001 rps is a token every 10000 s, longer than deadline_seconds (900 s, the default): a call that waits for one would be refused; set it to 0.00112 rps or more, or ratelimit.azure.deadline_seconds to 10100 s or more")
	wantMistakes(t, "providers: {github: {services: {search: {max_rps: 1e-9}}}}\n",
		"ratelimit.providers.github.services.search.max_rps: 1e-09 rps is a token every 1e+09 s, longer than deadline_seconds (900 s, the default): a call that waits for one would be refused; set it to 0.00112 rps or more, or ratelimit.providers.github.deadline_seconds to 1.01e+09 s or more")
	// A service's ceiling under the floor set for it: the provider's
	// min_rps, the operation's service's.
	wantMistakes(t, "aws: {min_rps: 1, services: {iam: {max_rps: 0.5}}}\n",
		"ratelimit.aws.services.iam.max_rps: 0.5 rps is below the floor of the adaptive rate in force here (1 rps, ratelimit.aws.min_rps): set min_rps here at or below it to go this low")
	wantMistakes(t, "aws: {services: {iam: {min_rps: 0.5}, iam.ListRoles: {max_rps: 0.3}}}\n",
		"ratelimit.aws.services.iam.ListRoles.max_rps: 0.3 rps is below the floor of the adaptive rate in force here (0.5 rps, ratelimit.aws.services.iam.min_rps): set min_rps here at or below it to go this low")
	accepted(t, "aws: {max_rps: 0.1}\n")                    // the default floor lowered to 0.1
	accepted(t, "aws: {services: {iam: {max_rps: 0.1}}}\n") // likewise
	accepted(t, "aws: {max_rps: 0.1, min_rps: 0.1}\n")
	accepted(t, "aws: {max_rps: 0.01, min_rps: 0.01}\n")
	accepted(t, "aws: {max_rps: 0.001, min_rps: 0.001, deadline_seconds: 1h}\n")
	accepted(t, "aws: {min_rps: 0.05, services: {iam: {max_rps: 0.1}, iam.ListRoles: {max_rps: 0.06}}}\n")
	accepted(t, "azure: {services: {storage: {max_rps: 0.33}}}\n") // the built-in rate, above azure's floor
	// Configure refuses them as ParseConfig does.
	g := newGov(t, Config{})
	if err := g.Configure(Config{AWS: ProviderConfig{MaxRPS: 1e-9}}); err == nil {
		t.Error("Configure accepted max_rps 1e-9")
	}
}

// The ranges of the settings are one table, their fields' range tags:
// a value out of range is the same error whether a document gives it or
// code sets it, for every ranged key of a provider's and a service's
// settings.
func TestRangesAreOneTable(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[ProviderConfig](), reflect.TypeFor[ServiceConfig]()} {
		ranges := yamlconf.Ranges(typ)
		if len(ranges) < 3 {
			t.Fatalf("%v: ranges %v", typ, ranges)
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			k := f.Type.Kind()
			if k == reflect.Pointer {
				k = f.Type.Elem().Kind()
			}
			if (k == reflect.Float64 || k == reflect.Int) && ranges[key] == "" {
				t.Errorf("%v.%s has no range tag", typ, f.Name)
			}
			if ranges[key] == "" {
				continue
			}
			// A value below every bound: -1.
			var cfg Config
			v := reflect.ValueOf(&cfg.AWS).Elem()
			path := "ratelimit.aws." + key
			doc := fmt.Sprintf("ratelimit: {aws: {%s: -1}}\n", key)
			if typ == reflect.TypeFor[ServiceConfig]() {
				cfg.AWS.Services = map[string]ServiceConfig{"ec2": {}}
				path = "ratelimit.aws.services.ec2." + key
				doc = fmt.Sprintf("ratelimit: {aws: {services: {ec2: {%s: -1}}}}\n", key)
				var s ServiceConfig
				setNumber(reflect.ValueOf(&s).Elem().Field(i), -1)
				cfg.AWS.Services["ec2"] = s
			} else {
				setNumber(v.Field(i), -1)
			}
			_, perr := ParseConfig([]byte(doc))
			verr := cfg.Validate()
			if perr == nil || verr == nil || perr.Error() != verr.Error() || !strings.HasPrefix(perr.Error(), path+": must be "+ranges[key]) {
				t.Errorf("%s: ParseConfig %v; Validate %v", key, perr, verr)
			}
			// An explicit 0 where the range excludes it: in a document the
			// decoder sees the key and refuses it; in code 0 is "unset".
			if ranges[key] == "> 0" {
				zero := strings.Replace(doc, "-1", "0", 1)
				if _, err := ParseConfig([]byte(zero)); err == nil || err.Error() != path+": must be > 0" {
					t.Errorf("%s: 0 in a document: %v", key, err)
				}
			}
		}
	}
}

func setNumber(f reflect.Value, x float64) {
	if f.Kind() == reflect.Pointer {
		f.Set(reflect.New(f.Type().Elem()))
		f = f.Elem()
	}
	if f.Kind() == reflect.Int {
		f.SetInt(int64(x))
	} else {
		f.SetFloat(x)
	}
}

// One naming grid in Go and in YAML: a setting's key is its Go name in
// snake case (MaxRPS is max_rps, MaxAttempts max_attempts,
// BreakerCooldownSeconds breaker_cooldown_seconds), the same in JSON; rates
// end in _rps, times in _seconds; max_retries counts retries and
// max_attempts attempts, as RetryPolicy.MaxAttempts does.
func TestSettingsNamingGrid(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[Config](), reflect.TypeFor[ProviderConfig](), reflect.TypeFor[ServiceConfig]()} {
		for i := range typ.NumField() {
			f := typ.Field(i)
			y, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if want := snake(f.Name); y != want || j != want {
				t.Errorf("%v.%s: yaml %q, json %q, want %q", typ, f.Name, y, j, want)
			}
		}
	}
	cfg := accepted(t, "ratelimit: {aws: {max_retries: 2}, azure: {max_attempts: 3}}\n")
	g := newGov(t, cfg)
	if a, z := g.Policy("aws").MaxAttempts, g.Policy("azure").MaxAttempts; a != 3 || z != 3 {
		t.Errorf("max_retries 2 gives %d attempts, max_attempts 3 gives %d", a, z)
	}
}

// snake is a Go field name in snake case, its initialisms one word:
// MaxRPS is max_rps, GCP is gcp.
func snake(name string) string {
	var b strings.Builder
	r := []rune(name)
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 && (unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// Azure scopes name a service after the resource provider's namespace,
// lower-cased and without Microsoft.: a key spelt otherwise never matches.
func TestAzureOverrideKeysThatNeverMatch(t *testing.T) {
	wantMistakes(t, "azure: {services: {Network: {max_rps: 5}}}\n",
		"ratelimit.azure.services.Network: never matches: Azure service names are resource provider namespaces in lower case (network)")
	wantMistakes(t, "azure: {services: {Microsoft.Compute: {max_rps: 5}}}\n",
		"ratelimit.azure.services.Microsoft.Compute: never matches: Azure service names are resource provider namespaces without Microsoft., in lower case (compute)")
	wantMistakes(t, "azure: {services: {microsoft.network: {max_rps: 5}}}\n",
		"ratelimit.azure.services.microsoft.network: never matches: Azure service names are resource provider namespaces without Microsoft., in lower case (network)")
	accepted(t, "azure: {services: {network: {max_rps: 5}, keyvault: {max_rps: 2}}}\n")
}

// An integration that knows its provider's names registers a check, which
// the core consults for each key of that provider, providers' included.
func TestRegisteredNameCheck(t *testing.T) {
	scopenames.Register("acme", func(service, op string) string {
		if service != "orders" {
			return "unknown acme service (did you mean orders?)"
		}
		return ""
	})
	defer scopenames.Register("acme", nil)
	wantMistakes(t, "providers: {acme: {services: {order: {max_rps: 5}, orders.List: {max_rps: 2}}}}\n",
		"ratelimit.providers.acme.services.order: unknown acme service (did you mean orders?)")
}

// A provider name under providers that differs in case alone from one an
// imported integration knows (GitHub, where cloudghttp's scopes say
// github) tunes no call, as AWS does not tune aws's: it is refused, as
// that is; so is a pair of names that differ in case alone (acme and
// Acme), of which a user could have meant one at most.
func TestAProviderNameInAnotherCaseIsRefused(t *testing.T) {
	scopenames.Register("acme", func(service, op string) string { return "" })
	defer scopenames.Register("acme", nil)
	wantMistakes(t, "providers: {Acme: {max_rps: 5}}\n",
		`ratelimit.providers.Acme: "Acme" is not acme, whose calls go by ratelimit.providers.acme (provider names are case-sensitive)`)
	wantMistakes(t, "providers: {myapi: {max_rps: 5}, MyAPI: {max_rps: 2}}\n",
		`ratelimit.providers.MyAPI: "MyAPI" and "myapi" differ in case alone, and name two providers (provider names are case-sensitive): keep the one your scopes say`,
		`ratelimit.providers.myapi: "myapi" and "MyAPI" differ in case alone, and name two providers (provider names are case-sensitive): keep the one your scopes say`)
	accepted(t, "providers: {acme: {max_rps: 5}, MyAPI: {max_rps: 2}}\n")
}
