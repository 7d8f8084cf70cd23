package sim

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseFile(t *testing.T) {
	sc, err := LoadFile("scenarios/estate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "estate" || sc.Seed != 7 || sc.Workload.Calls != 3000 || sc.Workload.Workers != 64 {
		t.Fatalf("workload: %+v", sc.Workload)
	}
	p := sc.Provider
	if p.Rate != 20 || p.Per["DescribeVolumes"] != (Limit{Rate: 10, Burst: 50}) || p.Tenant == nil || p.Tenant.Rate != 6 ||
		p.Tenant.Action != "DescribeInstances" || len(p.Changes) != 1 || p.Changes[0].At != 120*time.Second ||
		p.LatencyMedian != 60*time.Millisecond || p.LatencyP99 != 300*time.Millisecond || p.TransientRate != 0.01 {
		t.Fatalf("provider: %+v", p)
	}
	if s := sc.Governor.AWS.Services["ec2"]; s.MaxRPS != 20 || s.Burst != 100 {
		t.Fatalf("governor config: %+v", sc.Governor)
	}
	if sc.Model != nil {
		t.Fatal("a file has no model figures")
	}
	// The true rate: instances 20-6, volumes 10.
	if r := sc.TrueRate(0); r != 24 {
		t.Fatalf("true rate %v", r)
	}
}

func TestParseDefaultsAndBase(t *testing.T) {
	sc, err := Parse([]byte("name: x\nbase: drop\nprovider: {retry_after: yes}\nstrategies: [cloudg-aimd, static]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Workload.Calls != 4800 || len(sc.Provider.Changes) != 1 || !sc.Provider.RetryAfter ||
		len(sc.StrategyList()) != 2 || sc.Client.Rate != 20 {
		t.Fatalf("%+v", sc)
	}
	if _, err := Parse([]byte("time_limit_seconds: 10m\n")); err != nil {
		t.Fatalf("a duration string: %v", err)
	}
	// The aws section is cloudgaws's, read by cloudgaws.ParseConfig; a
	// ratelimit section replaces the base's governor configuration.
	sc, err = Parse([]byte("base: outage\naws: {retry_mode: adaptive, max_retries: 3}\nratelimit: {aws: {max_rps: 10}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.SDK.RetryMode != "adaptive" || sc.SDK.MaxRetries == nil || *sc.SDK.MaxRetries != 3 || sc.Governor.AWS.MaxRPS != 10 || sc.Governor.AWS.BreakerWait {
		t.Fatalf("sdk %+v, governor %+v", sc.SDK, sc.Governor.AWS)
	}
	if !strings.Contains(sc.Summary(), "cloudgaws in the SDK's adaptive retry mode") {
		t.Fatalf("summary %q", sc.Summary())
	}
	if sc, _ := Builtin(ScenarioOutage); !sc.Governor.AWS.BreakerWait || !strings.Contains(sc.Summary(), "breaker_wait") {
		t.Fatal("the outage scenario's governor does not wait for its breakers' verdicts")
	}
	// A moving tenant, a pause and a dead action.
	sc, err = Parse([]byte("provider:\n  tenant: {share: 0.5, actions: [DescribeVolumes], walk: {every_seconds: 10, step: 0.2, start: 0.3}}\n" +
		"  pauses: [{action: DescribeInstances, to_seconds: 60, at_first: yes}]\n  dead: [DescribeVolumes]\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := sc.Provider
	if tn := p.Tenant; tn.Share != 0.5 || !slices.Equal(tn.Actions, []string{"DescribeVolumes"}) || *tn.Walk != (Walk{Every: 10 * time.Second, Step: 0.2, Start: 0.3}) ||
		len(p.Pauses) != 1 || p.Pauses[0] != (Pause{Action: "DescribeInstances", To: time.Minute, AtFirst: true}) || !slices.Equal(p.Dead, []string{"DescribeVolumes"}) {
		t.Fatalf("provider %+v, tenant %+v", p, p.Tenant)
	}
	// An estate keeps its own scopes and calls; the rest can be set.
	sc, err = Parse([]byte("base: estate-paused\nworkload: {workers: 8}\nstrategies: [pool-goodput, plain]\nprovider: {latency: {median_ms: 80, p99_ms: 200}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Estate == nil || sc.Workload.Workers != 8 || sc.Workload.Calls != 2384 || len(sc.Provider.Pauses) != 1 || sc.Provider.LatencyMedian != 80*time.Millisecond {
		t.Fatalf("estate from a file: %+v", sc.Workload)
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"workload: {workers: 64, cals: 10}", "workload.cals: unknown key"},
		{"workload: {workers: -1}", "workload.workers: must be >= 0"},
		{"workload: {workers: 0}", "workload.workers: must be > 0"},
		{"time_limit_seconds: 0", "time_limit_seconds: must be > 0"},
		{"time_limit_seconds: 0s", "time_limit_seconds: must be > 0"},
		{"workload: {calls: 1.5}", "workload.calls: must be a whole number"},
		{"workload: {actions: []}", "workload.actions: must name at least one action"},
		{"provider: {rate: fast}", `provider.rate: must be a number, not "fast"`},
		{"provider: {changes: [{at_seconds: 60}]}", "provider.changes[0].rate: must be > 0"},
		{"provider: {changes: [{at_seconds: soon, rate: 2}]}", `provider.changes[0].at_seconds: must be a number of seconds or a duration, not "soon"`},
		{"provider: {changes: {at_seconds: 1}}", "provider.changes: must be a list"},
		{"provider: {tenant: {rat: 2}}", "provider.tenant.rat: unknown key"},
		{"provider: {actions: {DescribeVolumes: {burts: 2}}}", "provider.actions.DescribeVolumes.burts: unknown key"},
		{"provider: {outages: [{from_seconds: 5, to_seconds: 1}]}", "provider.outages[0].to_seconds: must be after from_seconds"},
		{"provider: {latency: {median_ms: 50, p99_ms: 10}}", "provider.latency: needs 0 < median_ms <= p99_ms"},
		{"provider: {transient_error_rate: 1}", "provider.transient_error_rate: must be in [0, 1)"},
		{"provider: {retry_after: maybe}", `provider.retry_after: must be true or false, not "maybe"`},
		{"client: {rate: 0}", "client.rate: must be > 0"},
		// x/time/rate's burst is an int: 1e300 overflowed it, and static
		// sent nothing until the time limit.
		{"client: {burst: 1e300}", "client.burst: must be at most 2147483647"},
		// failsafe's limiter takes the interval between requests as a
		// Duration: 1 s / 1e-12 overflowed it, and failsafe sent 95
		// requests in 60 s.
		{"client: {rate: 1e-12}", "client.rate: must be >= 1e-09"},
		{"client: {breaker_threshold: 0}", "client.breaker_threshold: must be >= 1 (failsafe's breaker would open on no failure)"},
		{"strategies: [aws-standard, governor]", `strategies[1]: unknown strategy "governor"`},
		{"base: nope", `base: unknown scenario "nope"`},
		{"seed: -3", `seed: must be a whole number, not "-3"`},
		{"- a\n- b", "(document): must be a mapping"},
		{"", "(document): empty scenario"},
		{"name: a\n---\nname: b\n", "(document): one YAML document expected"},
		{"name: [a", "(document): "},
		{"ratelimit: {aws: {max_rps: 0}}", "ratelimit.aws.max_rps"},
		{"ratelimit: {aws: {controller: cubic}}", "ratelimit.aws.controller"},
		{"ratelimit: {aws: {services: {ec2: {brust: 3}}}}", "ratelimit.aws.services.ec2.brust: unknown key"},
		{"aws: {retry_mode: legacy}", `aws.retry_mode: unknown retry mode "legacy"`},
		{"provider: {tenant: {rate: 2, walk: {every_seconds: 0}}}", "provider.tenant.walk.every_seconds: must be > 0"},
		{"provider: {tenant: {share: 2}}", "provider.tenant.share: must be <= 1"},
		{"provider: {pauses: [{action: A, from_seconds: 5}]}", "provider.pauses[0].to_seconds: must be after from_seconds"},
		{"provider: {pauses: [{to_seconds: 5}]}", "provider.pauses[0].action: must name an action"},
		{"base: estate-uniform\nworkload: {calls: 10}", "workload.calls: the estate of estate-uniform sets it"},
		{"base: estate-dead\nprovider: {rate: 10}", "provider.rate: the estate of estate-dead sets it"},
		// A key that is not printable is quoted, on one line.
		{"workload: {\"cals\\nINFO forged\": 10}", `workload."cals\nINFO forged": unknown key`},
		{"provider: {actions: {\"A\\nB\": {burst: 2}, \"A\\nB\": {burst: 3}}}", `provider.actions."A\nB": duplicate key`},
		{"provider: {actions: {\"A\\rB\": {burts: 2}}}", `provider.actions."A\rB".burts: unknown key`},
		{"base: estate-dead\nstrategies: [cloudg-aimd]", `strategies[0]: unknown strategy "cloudg-aimd" (plain, plain-adaptive`},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.doc, err, c.want)
		}
		// The governor's configuration errors are *sim.Error too.
		var se *Error
		if err != nil && !errors.As(err, &se) {
			t.Errorf("%q: error %T is not a *sim.Error", c.doc, err)
		}
	}
	if _, err := LoadFile("scenarios/missing.yaml"); err == nil {
		t.Error("a missing file loaded")
	}
}

func TestBuiltins(t *testing.T) {
	for _, name := range BuiltinNames() {
		sc, ok := Builtin(name)
		if !ok || sc.Name != name {
			t.Fatalf("%s: %v %v", name, ok, sc)
		}
		if err := sc.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, ok := Builtin("nope"); ok {
		t.Error("unknown built-in found")
	}
	a, _ := Builtin(ScenarioDefault)
	a.Workload.Actions[0] = "changed"
	b, _ := Builtin(ScenarioDefault)
	if b.Workload.Actions[0] == "changed" {
		t.Error("built-ins share state")
	}
}

// Parse's promise: duplicate keys are errors, the action names of
// provider.actions included (the second limit would silently replace the
// first).
func TestParseDuplicateActionIsAnError(t *testing.T) {
	doc := "provider: {actions: {DescribeVolumes: {rate: 5}, DescribeVolumes: {rate: 50}}}\n"
	_, err := Parse([]byte(doc))
	want := "provider.actions.DescribeVolumes: duplicate key"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%q: error %v, want %q", doc, err, want)
	}
}

// A bucket whose burst is under one token never holds a token: every
// request of its action would be throttled. provider.burst must be >= 1,
// and so must an action's burst and a change's, where they are set.
func TestParseBurstUnderOneIsAnError(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"provider: {actions: {DescribeVolumes: {rate: 5, burst: 0.5}}}", "provider.actions.DescribeVolumes.burst: must be >= 1"},
		{"provider: {changes: [{at_seconds: 5, rate: 5, burst: 0.5}]}", "provider.changes[0].burst: must be >= 1"},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.doc, err, c.want)
		}
	}
	// 0 leaves the burst as it is.
	if _, err := Parse([]byte("provider: {actions: {DescribeVolumes: {rate: 5, burst: 0}}, changes: [{at_seconds: 5, rate: 5}]}")); err != nil {
		t.Fatal(err)
	}
}

// A tenant whose until_seconds is not after its from_seconds would never
// take anything: an error, as an outage's or a pause's empty window is.
func TestParseTenantEmptyWindowIsAnError(t *testing.T) {
	doc := "provider: {tenant: {rate: 5, from_seconds: 50, until_seconds: 10}}"
	want := "provider.tenant.until_seconds: must be after from_seconds"
	if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%q: error %v, want %q", doc, err, want)
	}
	// until_seconds 0 (or left out): until the end.
	if _, err := Parse([]byte("provider: {tenant: {rate: 5, from_seconds: 50}}")); err != nil {
		t.Fatal(err)
	}
}

// An action the provider settings name that the workload never calls (a
// typo, DescribeInstance for DescribeInstances) would leave its limit,
// change, tenant, pause or dead operation without effect, silently: an
// error naming the key.
func TestParseActionNotInTheWorkloadIsAnError(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"provider: {actions: {DescribeVolume: {rate: 5}}}", `provider.actions.DescribeVolume: "DescribeVolume" is no action of the workload (DescribeInstances, DescribeVolumes)`},
		{"provider: {changes: [{at_seconds: 5, rate: 5, action: DescribeVolume}]}", `provider.changes[0].action: "DescribeVolume" is no action of the workload`},
		{"provider: {tenant: {rate: 5, action: DescribeVolume}}", `provider.tenant.action: "DescribeVolume" is no action of the workload`},
		{"provider: {tenant: {rate: 5, actions: [DescribeVolumes, DescribeInstance]}}", `provider.tenant.actions[1]: "DescribeInstance" is no action of the workload`},
		{"provider: {pauses: [{action: DescribeInstance, to_seconds: 60}]}", `provider.pauses[0].action: "DescribeInstance" is no action of the workload`},
		{"provider: {dead: [DescribeVolumes, DescribeInstance]}", `provider.dead[1]: "DescribeInstance" is no action of the workload`},
		{"base: estate-uniform\nprovider: {dead: [111111111111/us-east-1/ec2/DescribeInstance]}", `provider.dead[0]: "111111111111/us-east-1/ec2/DescribeInstance" is no action of the workload`},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.doc, err, c.want)
		}
	}
	if _, err := Parse([]byte("workload: {actions: [A, B]}\nprovider: {actions: {A: {rate: 5}}, tenant: {rate: 1, actions: [B]}, pauses: [{action: A, to_seconds: 9}], dead: [B], changes: [{rate: 3, action: A}]}")); err != nil {
		t.Fatal(err)
	}
}

// A tenant takes a rate or a share of the limit, not both: with both, the
// share would win and the rate be ignored, silently.
func TestParseTenantRateAndShareIsAnError(t *testing.T) {
	doc := "provider: {tenant: {rate: 5, share: 0.5}}"
	want := "provider.tenant.share: give rate or share, not both"
	if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%q: error %v, want %q", doc, err, want)
	}
}

// A strategy named twice would run twice, and a sweep would print the
// first run's figures on both rows (Sweep looks a strategy up by name):
// an error.
func TestParseRepeatedStrategyIsAnError(t *testing.T) {
	doc := "strategies: [static, cloudg-aimd, static]"
	want := `strategies[2]: "static" is named twice`
	if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%q: error %v, want %q", doc, err, want)
	}
}

// An estate's figures set apart the scope its provider pauses or kills
// (Estate.Affected: "unaffected done", "of which elsewhere"). A file that
// pauses or kills a scope sets that scope apart, not the base's, and a
// file that pauses and kills nothing sets none apart; more than one such
// scope is an error, the figures setting one apart.
func TestParseEstateAffectedFollowsTheFile(t *testing.T) {
	dead := EstateKey("111111111111", "eu-west-1", "rds", "ListTagsForResource")
	paused := EstateKey("333333333333", "us-east-1", "ec2", "DescribeInstanceAttribute")
	for _, c := range []struct{ doc, want string }{
		{"base: estate-uniform\nprovider: {dead: [" + dead + "]}", dead},
		{"base: estate-paused\nprovider: {pauses: [{action: " + paused + ", to_seconds: 60}]}", paused},
		{"base: estate-paused\nprovider: {pauses: []}", ""},
		{"base: estate-paused\nworkload: {workers: 8}", EstateKey("222222222222", "eu-west-1", "ec2", "DescribeInstanceAttribute")},
	} {
		sc, err := Parse([]byte(c.doc))
		if err != nil {
			t.Fatalf("%q: %v", c.doc, err)
		}
		if sc.Estate.Affected != c.want {
			t.Errorf("%q: affected %q, want %q", c.doc, sc.Estate.Affected, c.want)
		}
	}
	doc := "base: estate-paused\nprovider: {dead: [" + dead + "]}"
	want := "provider: an estate's figures set one paused or dead scope apart"
	if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%q: error %v, want %q", doc, err, want)
	}
}

// The summary gives each action's limit as the provider applies it: an
// override that sets only the burst keeps provider.rate, one that sets
// only the rate keeps provider.burst (limitOf), not "0 rps" or "burst 0".
func TestSummaryGivesTheLimitsAnOverrideLeaves(t *testing.T) {
	sc, err := Parse([]byte("provider: {rate: 10, burst: 100, actions: {DescribeInstances: {rate: 5}, DescribeVolumes: {burst: 50}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "provider 10 rps, burst 100 per action (DescribeInstances: 5 rps, burst 100) (DescribeVolumes: 10 rps, burst 50);"
	if s := sc.Summary(); !strings.Contains(s, want) {
		t.Errorf("summary %q\nlacks %q", s, want)
	}
}

// failsafe's breaker opens after client.breaker_threshold failures in a
// row: a threshold of 0 is refused where failsafe runs (it lost 185 of 200
// calls of a provider that throttled none), and left alone where it does
// not.
func TestParseBreakerThresholdOfNoFailures(t *testing.T) {
	if _, err := Parse([]byte("client: {breaker_threshold: 0}\nstrategies: [failsafe]")); err == nil || !strings.Contains(err.Error(), "client.breaker_threshold: must be >= 1") {
		t.Errorf("breaker_threshold 0 with failsafe: error %v, want client.breaker_threshold: must be >= 1", err)
	}
	if _, err := Parse([]byte("client: {breaker_threshold: 0}\nstrategies: [static, cloudg-aimd]")); err != nil {
		t.Errorf("breaker_threshold 0 without failsafe: error %v, want none", err)
	}
}

// The summary says what the provider pauses and throttles for good, as an
// estate's does: a file that pauses DescribeVolumes for a minute and
// kills DescribeInstances has a table whose header says so, not one that
// reads as the default scenario's.
func TestSummaryGivesPausesAndDeadActions(t *testing.T) {
	sc, err := Parse([]byte("provider: {pauses: [{action: DescribeVolumes, from_seconds: 10, to_seconds: 70}, {action: DescribeVolumes, to_seconds: 30, at_first: true}], dead: [DescribeInstances]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := sc.Summary()
	for _, want := range []string{"DescribeVolumes paused 10.0s-70.0s (Retry-After)", "DescribeVolumes paused for 30.0s from its first request (Retry-After)", "DescribeInstances throttled for good"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary %q lacks %q", s, want)
		}
	}
}
