//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/yamlconf"
)

func TestParseConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`
enabled: true
aws:
  max_rps: 15
  account_max_rps: 0
  max_retries: 0
  breaker_cooldown_seconds: 90s
  breaker_wait: true
  deadline_seconds: 300
  services:
    ec2: {max_rps: 10}
    ec2.DescribeInstances: {max_rps: 2, burst: 4}
    sts: {per_operation: true}
azure:
  enabled: false
gcp:
  controller: goodput
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AWS.MaxRPS != 15 || *cfg.AWS.AccountMaxRPS != 0 || *cfg.AWS.MaxRetries != 0 ||
		cfg.AWS.BreakerCooldownSeconds != 90 || !cfg.AWS.BreakerWait || cfg.AWS.DeadlineSeconds != 300 ||
		cfg.AWS.Services["ec2.DescribeInstances"].Burst != 4 || !*cfg.AWS.Services["sts"].PerOperation ||
		*cfg.Azure.Enabled || cfg.GCP.Controller != "goodput" {
		t.Fatalf("parsed %+v", cfg)
	}
}

func TestParseConfigForms(t *testing.T) {
	for _, doc := range []string{
		"ratelimit:\n  aws:\n    max_rps: 7\nother_section: {x: 1}\n",
		`{"aws": {"max_rps": 7}}`,
		`{"ratelimit": {"aws": {"max_rps": 7}}}`,
		"aws:\n  max_rps: 7.0\n",
	} {
		cfg, err := ParseConfig([]byte(doc))
		if err != nil || cfg.AWS.MaxRPS != 7 {
			t.Errorf("%q: %+v, %v", doc, cfg.AWS, err)
		}
	}
	for _, doc := range []string{"", "# nothing\n", "---\n", "null"} {
		cfg, err := ParseConfig([]byte(doc))
		if err != nil || cfg.AWS.MaxRPS != 0 {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

func TestParseConfigErrorsNameTheKeyPath(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"aws:\n  services:\n    ec2:\n      brust: 10\n", "ratelimit.aws.services.ec2.brust: unknown key (did you mean burst?)"},
		{"ratelimit:\n  aws:\n    maxrps: 1\n", "ratelimit.aws.maxrps: unknown key (did you mean max_rps?)"},
		{"oracle: {}\n", "ratelimit.oracle: unknown key (a provider other than aws, azure and gcp is tuned under providers: ratelimit.providers.oracle)"},
		{"oracle: 1\n", "ratelimit.oracle: unknown key"},
		// An operation's settings nested in its service's: they go beside
		// it, under services, as service.Operation.
		{"aws:\n  services:\n    ec2:\n      DescribeInstances: {max_rps: 1}\n",
			"ratelimit.aws.services.ec2.DescribeInstances: unknown key (an operation's settings go under services as ec2.DescribeInstances, beside ec2's own)"},
		{"providers:\n  github:\n    services:\n      rest: {search: {max_rps: 1}}\n",
			"ratelimit.providers.github.services.rest.search: unknown key (an operation's settings go under services as rest.search, beside rest's own)"},
		{"aws:\n  services:\n    ec2:\n      DescribeInstances: 1\n", "ratelimit.aws.services.ec2.DescribeInstances: unknown key"},
		// An empty key names no setting, and no provider under providers.
		{"\"\": {max_rps: 5}\n", "ratelimit: keys must be non-empty strings"},
		{"aws: {\"\": 5}\n", "ratelimit.aws: keys must be non-empty strings"},
		// Nor does a null key (~, null): YAML's null, not a name; a
		// quoted "null" is a name.
		{"providers:\n  ~: {max_rps: 1}\n", "ratelimit.providers: keys must be non-empty strings"},
		{"aws:\n  services:\n    null: {max_rps: 1}\n", "ratelimit.aws.services: keys must be non-empty strings"},
		{"aws:\n  services:\n    Null: {max_rps: 1}\n    \"null\": {max_rps: 0}\n", "ratelimit.aws.services: keys must be non-empty strings\nratelimit.aws.services.null.max_rps: must be > 0"},
		// A key in another case is named, not sent under providers.
		{"AWS: {max_rps: 5}\n", "ratelimit.AWS: unknown key (did you mean aws?)"},
		{"GCP:\n  max_rps: 5\n", "ratelimit.GCP: unknown key (did you mean gcp?)"},
		{"aws: {MAX_RPS: 5}\n", "ratelimit.aws.MAX_RPS: unknown key (did you mean max_rps?)"},
		{"aws: {BREAKER_THRESHOLD: 5}\n", "ratelimit.aws.BREAKER_THRESHOLD: unknown key (did you mean breaker_threshold?)"},
		{"aws:\n  max_rps: 0\n", "ratelimit.aws.max_rps: must be > 0"},
		{"aws:\n  max_rps: -3\n", "ratelimit.aws.max_rps: must be > 0"},
		{"azure:\n  services:\n    network: {max_rps: 0}\n", "ratelimit.azure.services.network.max_rps: must be > 0"},
		{"gcp:\n  breaker_threshold: 0\n", "ratelimit.gcp.breaker_threshold: must be > 0"},
		{"aws:\n  breaker_threshold: 2.5\n", `ratelimit.aws.breaker_threshold: "2.5" is not a whole number`},
		{"aws:\n  breaker_cooldown_seconds: soon\n", `ratelimit.aws.breaker_cooldown_seconds: malformed duration "soon" (seconds, or a duration such as 90s)`},
		{"aws:\n  deadline_seconds: -1m\n", "ratelimit.aws.deadline_seconds: must be > 0"},
		// Well formed, but longer than a Duration: not malformed, read as
		// its seconds, and longer than the governor keeps a deadline.
		{"aws:\n  deadline_seconds: 3000000h\n", `ratelimit.aws.deadline_seconds: 1.08e+10 s is above the longest deadline the governor keeps (1152921504.606846976 s, 2^60 ns, about 36.5 years)`},
		{"aws:\n  deadline_seconds: 5d\n", `ratelimit.aws.deadline_seconds: malformed duration "5d" (seconds, or a duration such as 90s)`},
		{"aws:\n  max_rps: fast\n", `ratelimit.aws.max_rps: "fast" is not a number`},
		{"aws:\n  max_rps: .nan\n", `ratelimit.aws.max_rps: ".nan" is not a finite number`},
		{"aws:\n  enabled: maybe\n", `ratelimit.aws.enabled: "maybe" is not true or false`},
		{"aws:\n  max_retries: -1\n  max_rps: 5\n", "ratelimit.aws.max_retries: must be >= 0"},
		{"aws:\n  account_max_rps: -1\n", "ratelimit.aws.account_max_rps: must be >= 0 (0 turns the bucket off)"},
		{"aws:\n  controller: pid\n", `ratelimit.aws.controller: unknown controller "pid" (aimd or goodput)`},
		{"aws:\n  services:\n    ec2.A.B: {max_rps: 1}\n", `ratelimit.aws.services.ec2.A.B: a service key is "<service>" or "<service>.<Operation>"`},
		{"aws:\n  services:\n    ec2.A: {per_operation: true}\n", "ratelimit.aws.services.ec2.A.per_operation: only a service key can set per_operation"},
		{"aws: [1, 2]\n", "ratelimit.aws: must be a mapping"},
		{"aws:\n  max_rps: 1\n  max_rps: 2\n", "ratelimit.aws.max_rps: duplicate key"},
		{"- 1\n", "ratelimit: must be a mapping"},
		{"aws: {max_rps: [1]}\n", "ratelimit.aws.max_rps: must be a single value"},
		{"a: b\n---\nc: d\n", "ratelimit: one YAML document expected"},
	} {
		_, err := ParseConfig([]byte(c.doc))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q:\n got %v\nwant %s", c.doc, err, c.want)
		}
		var ce *yamlconf.Error
		if err != nil && !errors.As(err, &ce) && !strings.HasPrefix(err.Error(), "ratelimit:") {
			t.Errorf("%q: %T is not a *yamlconf.Error", c.doc, err)
		}
	}
	if _, err := ParseConfig([]byte("aws: {max_rps: 1\n")); err == nil || !strings.HasPrefix(err.Error(), "ratelimit: ") {
		t.Errorf("broken YAML: %v", err)
	}
}

// A YAML merge key (<<) is not read through: it is refused as an unknown
// key wherever it is, in the same words. Under providers or services it
// is no entry named <<, and at the top of the section no provider to
// tune under providers. A quoted "<<" is a name like any other.
func TestMergeKeyIsRefusedWhereverItIs(t *testing.T) {
	for doc, want := range map[string]string{
		"base: &b {github: {max_rps: 7}}\nratelimit:\n  providers:\n    <<: *b\n": "ratelimit.providers.<<: unknown key",
		"ratelimit:\n  providers: {<<: [{github: {max_rps: 7}}]}\n":               "ratelimit.providers.<<: unknown key",
		"ratelimit:\n  providers: {<<: {}}\n":                                     "ratelimit.providers.<<: unknown key",
		"base: &b {aws: {max_rps: 7}}\nratelimit:\n  <<: *b\n":                    "ratelimit.<<: unknown key",
		"ratelimit:\n  aws:\n    services: {<<: {ec2: {max_rps: 5}}}\n":           "ratelimit.aws.services.<<: unknown key",
		"ratelimit:\n  aws: {<<: {max_rps: 5}}\n":                                 "ratelimit.aws.<<: unknown key",
	} {
		cfg, err := ParseConfig([]byte(doc))
		if err == nil || err.Error() != want {
			t.Errorf("%q: %+v, %v; want %s", doc, cfg.Providers, err, want)
		}
	}
	cfg, err := ParseConfig([]byte("providers: {\"<<\": {max_rps: 5}}\n"))
	if err != nil || cfg.Providers["<<"].MaxRPS != 5 {
		t.Errorf("a provider named \"<<\": %+v, %v", cfg.Providers, err)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cloudg.yaml")
	os.WriteFile(p, []byte("ratelimit:\n  gcp:\n    max_concurrency: 4\n"), 0o600)
	cfg, err := LoadConfig(p)
	if err != nil || cfg.GCP.MaxConcurrency != 4 {
		t.Fatalf("%+v %v", cfg.GCP, err)
	}
	os.WriteFile(p, []byte("ratelimit:\n  gcp:\n    max_concurency: 4\n"), 0o600)
	if _, err := LoadConfig(p); err == nil || !strings.HasSuffix(err.Error(), "ratelimit.gcp.max_concurency: unknown key (did you mean max_concurrency?)") {
		t.Fatalf("%v", err)
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Fatal("missing file")
	}
}

func TestValidateProgrammaticConfig(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatal(err)
	}
	bad := Config{Azure: ProviderConfig{Services: map[string]ServiceConfig{"network": {Burst: -1}}}}
	if err := bad.Validate(); err == nil || err.Error() != "ratelimit.azure.services.network.burst: must be > 0" {
		t.Fatal(err)
	}
	if _, err := NewGovernor(bad); err == nil {
		t.Fatal("NewGovernor accepted an invalid config")
	}
	// A value that is not finite, which only code can set, is refused
	// for being so, not for its bound: +Inf is > 0.
	for _, v := range []float64{math.Inf(1), math.NaN(), math.Inf(-1)} {
		err := Config{AWS: ProviderConfig{MaxRPS: v}}.Validate()
		if want := "ratelimit.aws.max_rps: must be a finite number > 0"; err == nil || err.Error() != want {
			t.Errorf("max_rps %v: %v; want %q", v, err, want)
		}
	}
}

// A time a document sets above zero but below a nanosecond is a
// nanosecond, not zero, which would mean something else: a base delay of
// zero keeps every backoff at zero (the decorrelated jitter grows from
// the base), and a breaker_dead_seconds of 0 turns the dead-scope rule
// off. So is one too small for a float64 (1e-400), which is not zero
// either.
func TestSubNanosecondTimesAreANanosecond(t *testing.T) {
	for _, tiny := range []string{"1e-10", "1e-400"} {
		cfg, err := ParseConfig([]byte("aws: {base_delay_seconds: " + tiny + ", max_backoff_seconds: " + tiny + ", deadline_seconds: 5e-324, breaker_dead_seconds: " + tiny + "}\n"))
		if err != nil {
			t.Fatal(err)
		}
		g, err := NewGovernor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		set := g.provider("aws").set
		if r := set.retry; r.base != 1 || r.maxBackoff != 1 || r.deadline != 1 || set.dead != 1 {
			t.Errorf("%s: base %v, max backoff %v, deadline %v, dead after %v; want 1ns each", tiny, r.base, r.maxBackoff, r.deadline, set.dead)
		}
	}
}

// A number in a document is read as YAML reads it, as the original
// system's files were: max_concurrency: 017 is octal, 15. A number beyond
// a float64's range is out of range.
func TestConfigNumbersAreReadAsYAMLReadsThem(t *testing.T) {
	cfg, err := ParseConfig([]byte("aws: {max_concurrency: 017}\n"))
	if err != nil || cfg.AWS.MaxConcurrency != 15 {
		t.Fatalf("max_concurrency: 017 read as %d, %v; want 15", cfg.AWS.MaxConcurrency, err)
	}
	if _, err := ParseConfig([]byte("aws: {max_rps: 1e400}\n")); err == nil || !strings.Contains(err.Error(), `ratelimit.aws.max_rps: "1e400" is out of range`) {
		t.Fatalf("max_rps: 1e400: %v; want it out of range", err)
	}
}

func TestBuiltInDefaults(t *testing.T) {
	g, _ := NewGovernor(Config{})
	aws := g.provider("aws").set
	type want struct{ rate, burst float64 }
	for svc, w := range map[string]want{
		"ec2": {20, 100}, "iam": {10, 40}, "sts": {50, 100}, "organizations": {5, 10},
		"controltower": {2, 5}, "route53": {5, 5}, "resourcegroupstaggingapi": {5, 10},
		"cloudcontrol": {5, 10}, "cloudformation": {5, 10}, "lambda": {15, 15},
		"s3": {20, 40},
	} {
		sp := aws.leafSpec(Scope{Service: svc})
		if sp.Rate != w.rate || sp.Capacity() != w.burst || sp.Floor != 0.2 || !sp.Adaptive {
			t.Errorf("aws %s: %+v, want %v/%v floor 0.2", svc, sp, w.rate, w.burst)
		}
	}
	if !aws.services["ec2"].perOp || aws.bulkhead != 128 || aws.account != nil || aws.global != nil {
		t.Errorf("aws: %+v", aws)
	}
	r := aws.retry
	if r.attempts != 9 || r.base != 500*time.Millisecond || r.maxBackoff != 60*time.Second || r.deadline != 900*time.Second || aws.budget != 500 {
		t.Errorf("aws retry %+v", r)
	}
	if b := aws.breaker; b.Threshold != 5 || b.Cooldown != 60*time.Second || b.MaxCooldown != 600*time.Second {
		t.Errorf("aws breaker %+v", b)
	}
	az := g.provider("azure").set
	for svc, w := range map[string]want{"compute": {15, 100}, "network": {30, 200}, "storage": {0.33, 20}, "resourcegraph": {3, 15}} {
		sp := az.leafSpec(Scope{Service: svc})
		if sp.Rate != w.rate || sp.Capacity() != w.burst || sp.Floor != min(0.1, w.rate) {
			t.Errorf("azure %s: %+v", svc, sp)
		}
	}
	if az.account == nil || az.account.Rate != 20 || az.account.Capacity() != 200 || az.bulkhead != 16 {
		t.Errorf("azure: %+v", az)
	}
	gcp := g.provider("gcp").set
	for op, w := range map[string]want{"ListAssets": {1.5, 10}, "SearchAllResources": {6, 20}, "SearchAllIamPolicies": {6, 20}, "ExportAssets": {10, 20}} {
		key := gcp.leafKey(Scope{Service: "cloudasset", Operation: op})
		sp := gcp.leafSpec(key)
		if sp.Rate != w.rate || sp.Capacity() != w.burst || sp.Floor != 0.05 {
			t.Errorf("gcp %s: %+v", op, sp)
		}
		if (key.Operation != "") != (op != "ExportAssets") {
			t.Errorf("gcp %s: leaf key %v", op, key)
		}
	}
	if gcp.bulkhead != 16 {
		t.Errorf("gcp bulkhead %d", gcp.bulkhead)
	}
}

func TestLeafGranularity(t *testing.T) {
	g, _ := NewGovernor(Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{
		"iam.ListRoles": {MaxRPS: 1}, "s3": {PerOperation: new(true)}, "ec2": {PerOperation: new(false)},
	}}})
	set := g.provider("aws").set
	for _, c := range []struct {
		sc    Scope
		keeps bool
	}{
		{Scope{Service: "iam", Operation: "ListRoles"}, true},
		{Scope{Service: "iam", Operation: "ListUsers"}, false},
		{Scope{Service: "s3", Operation: "ListBuckets"}, true},
		{Scope{Service: "ec2", Operation: "DescribeVpcs"}, false},
		{Scope{Service: "sts", Operation: "GetCallerIdentity"}, false},
	} {
		if got := set.leafKey(c.sc).Operation != ""; got != c.keeps {
			t.Errorf("%v: keeps operation %v, want %v", c.sc, got, c.keeps)
		}
	}
	if sp := set.leafSpec(Scope{Service: "iam", Operation: "ListRoles"}); sp.Rate != 1 || sp.Capacity() != 2 {
		t.Errorf("iam.ListRoles %+v", sp)
	}
	// A user rate for ec2 without a burst: twice the rate.
	g2, _ := NewGovernor(Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"ec2": {MaxRPS: 10}}}})
	if sp := g2.provider("aws").set.leafSpec(Scope{Service: "ec2"}); sp.Rate != 10 || sp.Capacity() != 20 {
		t.Errorf("ec2 %+v", sp)
	}
}

// per_operation at the provider gives every service's operations their own
// leaf (and breaker), but for a service the user keeps whole.
func TestProviderPerOperation(t *testing.T) {
	cfg, err := ParseConfig([]byte("aws: {per_operation: true, services: {iam: {per_operation: false}}}"))
	if err != nil {
		t.Fatal(err)
	}
	set := resolveProvider("aws", cfg.AWS, true)
	for _, c := range []struct {
		sc    Scope
		perOp bool
	}{
		{Scope{Provider: "aws", Service: "secretsmanager", Operation: "DescribeSecret"}, true},
		{Scope{Provider: "aws", Service: "lambda", Operation: "ListFunctions"}, true},
		{Scope{Provider: "aws", Service: "iam", Operation: "ListRoles"}, false},
		{Scope{Provider: "aws", Service: "ec2", Operation: "DescribeVpcs"}, true},
	} {
		if got := set.leafKey(c.sc).Operation != ""; got != c.perOp {
			t.Errorf("%v: per operation %v, want %v", c.sc, got, c.perOp)
		}
	}
	if plain := resolveProvider("aws", ProviderConfig{}, true); plain.leafKey(Scope{Provider: "aws", Service: "secretsmanager", Operation: "DescribeSecret"}).Operation != "" {
		t.Error("secretsmanager is per operation by default")
	}
	if set.bucketsEqual(resolveProvider("aws", ProviderConfig{}, true)) {
		t.Error("per_operation does not change the buckets")
	}
}

// max_attempts counts attempts, as RetryPolicy.MaxAttempts does, beside
// the spec's max_retries; one or the other.
func TestMaxAttemptsBesideMaxRetries(t *testing.T) {
	cfg, err := ParseConfig([]byte("aws: {max_attempts: 3}"))
	if err != nil {
		t.Fatal(err)
	}
	g := newGov(t, cfg)
	if p := g.Policy("aws"); p.MaxAttempts != 3 {
		t.Fatalf("max_attempts 3: %+v", p)
	}
	cfg, _ = ParseConfig([]byte("ratelimit: {aws: {max_retries: 2}}"))
	if p := newGov(t, cfg).Policy("aws"); p.MaxAttempts != 3 {
		t.Fatalf("max_retries 2: %+v", p)
	}
	if _, err := ParseConfig([]byte("aws: {max_attempts: 3, max_retries: 2}")); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("both: %v", err)
	}
	if _, err := ParseConfig([]byte("aws: {max_attempts: 0}")); err == nil {
		t.Fatal("max_attempts 0 accepted")
	}
}

// Config.Provider finds a provider's settings where the configuration
// keeps them: its own field for aws, azure and gcp, Providers for any
// other, every default for a provider it does not name.
func TestConfigProvider(t *testing.T) {
	c := Config{
		AWS:       ProviderConfig{MaxRPS: 1},
		Azure:     ProviderConfig{MaxRPS: 2},
		GCP:       ProviderConfig{MaxRPS: 3},
		Providers: map[string]ProviderConfig{"github": {MaxRPS: 4}},
	}
	for name, want := range map[string]float64{"aws": 1, "azure": 2, "gcp": 3, "github": 4, "acme": 0} {
		if got := c.Provider(name).MaxRPS; got != want {
			t.Errorf("Provider(%q).MaxRPS = %v, want %v", name, got, want)
		}
	}
}

// The governor keeps its own copy of the configuration it was given: a
// caller who changes its Config afterwards, or the one Config returned,
// changes nothing in force, and an invalid Configure changes nothing,
// even for a provider no call has used yet, whose settings are resolved
// at its first call.
func TestConfigureKeepsItsOwnCopy(t *testing.T) {
	github := Scope{Provider: "github", Account: "my-org", Service: "rest"}
	cfg := Config{Providers: map[string]ProviderConfig{"github": {MaxRPS: 5, Services: map[string]ServiceConfig{"search": {MaxRPS: 0.5}}}}}
	g, err := NewGovernor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The caller's own Config, changed and refused.
	cfg.Providers["github"] = ProviderConfig{MaxRPS: 1e-9}
	if err := g.Configure(cfg); err == nil {
		t.Fatal("Configure accepted max_rps 1e-9")
	}
	if r := g.Inspect(github).Leaf.Rate; r != 5 {
		t.Errorf("after the caller changed its Config and Configure refused it: github's rate %v, want 5", r)
	}
	// The Config the governor returned, changed and refused.
	c := g.Config()
	c.Providers["github"] = ProviderConfig{MaxRPS: 1e-9}
	if err := g.Configure(c); err == nil {
		t.Fatal("Configure accepted max_rps 1e-9")
	}
	if r := g.Inspect(github).Leaf.Rate; r != 5 {
		t.Errorf("after Config()'s result was changed and Configure refused it: github's rate %v, want 5", r)
	}
	if r := g.Config().Provider("github").Services["search"].MaxRPS; r != 0.5 {
		t.Errorf("Config().Providers[github].Services[search].MaxRPS = %v, want 0.5", r)
	}
	// Every pointer and map of a ProviderConfig is copied, a field added
	// later too.
	var pc ProviderConfig
	v := reflect.ValueOf(&pc).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Map:
			f.Set(reflect.MakeMap(f.Type()))
		}
	}
	cv := reflect.ValueOf(pc.clone())
	for i := range v.NumField() {
		if f := v.Field(i); (f.Kind() == reflect.Pointer || f.Kind() == reflect.Map) && f.Pointer() == cv.Field(i).Pointer() {
			t.Errorf("ProviderConfig.clone shares %s", v.Type().Field(i).Name)
		}
	}
}

// A max_retries set in code beyond what a document can give (math.MaxInt,
// to retry until the deadline) is that many retries, as many attempts
// as an int holds: the attempt it adds must not wrap the count negative,
// which retried nothing, and told the SDK integrations, which configure
// their own retry loop from Governor.Policy, a negative MaxAttempts.
func TestHugeMaxRetriesSaturates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		huge := math.MaxInt
		g := newGov(t, Config{AWS: ProviderConfig{MaxRetries: &huge, BaseDelaySeconds: 1, MaxBackoffSeconds: 1}})
		if a := g.Policy("aws").MaxAttempts; a != math.MaxInt {
			t.Errorf("max_retries %d: Policy().MaxAttempts %d, want %d", huge, a, math.MaxInt)
		}
		n := 0
		if err := Do(context.Background(), iamUsers, failing(&n, transientErr(), transientErr()), WithGovernor(g)); err != nil || n != 3 {
			t.Errorf("max_retries %d: Do: %v after %d attempts, want success after 3", huge, err, n)
		}
	})
}
