package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/examples/scan/estate"
	"github.com/cloudg/cloudg/resilience"
)

// The scenarios run scaled down: a small estate (315 calls a scan), a
// governor whose adaptive rates stop at 10 rps, and SDK calls of 5
// attempts 20 ms apart. They run in a synctest bubble, the clients
// reaching the estate in-process (estate.Transport): the governor, the
// SDK's backoff, the pools, the estate's buckets and pauses and the run's
// makespan all keep the bubble's virtual time, so a pause of seconds takes
// none, and no figure depends on the machine's load.
var testSizes = estate.Sizes{Instances: 6, VPCs: 1, Subnets: 3, SecurityGroups: 2, Secrets: 22, Tables: 4, Roles: 5}

// slowBuiltins gives the built-in AWS services whose ceiling is under the
// tests' min_rps of 10 their ceiling as their floor, which a provider's
// min_rps above it is refused for: they keep the fixed rate they had.
var slowBuiltins = map[string]resilience.ServiceConfig{
	"organizations": {MinRPS: 5}, "controltower": {MinRPS: 2}, "route53": {MinRPS: 5},
	"resourcegroupstaggingapi": {MinRPS: 5}, "cloudcontrol": {MinRPS: 5}, "cloudformation": {MinRPS: 5},
}

func testOptions(args ...string) func(t *testing.T) options {
	return func(t *testing.T) options {
		t.Helper()
		o, err := parseFlags(append([]string{"-workers", "8"}, args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		o.sizes = testSizes
		o.inProcess = true
		o.gov = &resilience.Config{AWS: resilience.ProviderConfig{MinRPS: 10, Services: slowBuiltins}}
		o.awsOpts = []cloudgaws.Option{cloudgaws.WithMaxRetries(4), cloudgaws.WithBaseRetryer(func() aws.Retryer {
			return retry.NewStandard(func(so *retry.StandardOptions) {
				so.RateLimiter = ratelimit.None
				so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 20 * time.Millisecond, nil })
			})
		})}
		return o
	}
}

// scan runs a scenario, in a synctest bubble when o.inProcess, and checks
// what holds in every one: the report prints each run's figures as the
// runs hold them, every call made has an outcome, and the silent partial
// results are the failed calls the ledgers did not count.
func scan(t *testing.T, o options) (string, []*scanRun) {
	t.Helper()
	var out bytes.Buffer
	var runs []*scanRun
	var err error
	if o.inProcess {
		synctest.Test(t, func(*testing.T) { runs, err = run(context.Background(), &out, nil, o) })
	} else {
		runs, err = run(context.Background(), &out, nil, o)
	}
	if err != nil {
		t.Fatal(err)
	}
	report := out.String()
	t.Log("\n" + report)
	if len(runs) != o.runs {
		t.Fatalf("%d runs, want %d", len(runs), o.runs)
	}
	planned := total(plan(testSizes))
	for i, r := range runs {
		made := 0
		for _, n := range r.outcomes {
			made += n
		}
		if made != int(r.done.Load()) || made > planned {
			t.Errorf("run %d: %d outcomes, %d calls made, %d planned", i+1, made, r.done.Load(), planned)
		}
		var failed, counted int64
		for _, c := range r.colls {
			failed += c.failed.Load()
			counted += min(int64(c.ledger.Lost()-c.ledger.Count(resilience.LossPanicked))-c.dropped(), c.failed.Load()) // a task dropped, or a panic, is no failed call
		}
		if r.outcomes[outcomeOK] != made-int(failed) || r.silent() != failed-counted {
			t.Errorf("run %d: %d ok of %d, %d failed, %d counted, %d silent", i+1, r.outcomes[outcomeOK], made, failed, counted, r.silent())
		}
		// Every call lost is in a ledger, in every scenario.
		if r.silent() != 0 {
			t.Errorf("run %d: %d silent partial result(s)", i+1, r.silent())
		}
		// A first call the pool deferred is a task it ran again, and the
		// report says how many.
		if d := r.deferred.Load(); d != int64(r.rerun) {
			t.Errorf("run %d: %d first call(s) deferred, the pool ran %d task(s) again", i+1, d, r.rerun)
		} else if line := fmt.Sprintf("  deferred            %d first call(s) ", d); d > 0 && !strings.Contains(report, line) {
			t.Errorf("the report has no line %q", line)
		}
		// A run that made every call of its scopes took at least the
		// ideal: it is a lower bound. (Times are virtual: no round trip
		// takes any.)
		if o.inProcess && r.outcomes[outcomeOK] == planned {
			if b := r.s.ideal(r.start, func(estate.Scope) bool { return true }); r.makespan < b.d {
				t.Errorf("run %d: makespan %s, under its ideal lower bound %s", i+1, r.makespan, b)
			}
		}
		for _, want := range []string{
			fmt.Sprintf("run %d\n  makespan            %s\n", i+1, secs(r.makespan)),
			fmt.Sprintf("  calls               %d of %d planned: ", made, planned),
			fmt.Sprintf("  silent partial results: %d failed call(s) no ledger counted\n", r.silent()),
		} {
			if !strings.Contains(report, want) {
				t.Errorf("the report has no line %q", want)
			}
		}
	}
	return report, runs
}

// estateCount sums the estate's counts over the scopes sel selects.
func estateCount(r *scanRun, sel estate.Scope) (c estate.Count) {
	for sc, n := range r.s.est.Counts() {
		if sel.Matches(sc) {
			c.Requests += n.Requests
			c.Throttled += n.Throttled
		}
	}
	return c
}

func TestPlanIsTheIssuesScan(t *testing.T) {
	if n := total(plan(estate.DefaultSizes)); n != 726 {
		t.Errorf("a scan of the default estate plans %d calls, want 726", n)
	}
	b := (&scanner{est: estate.New(estate.Config{})}).ideal(time.Now(), func(estate.Scope) bool { return true })
	// 38 calls at 20 rps, the first 20 at once from the full bucket.
	if b.scope.Action != "DescribeSecret" || b.calls != 38 || b.d != 900*time.Millisecond {
		t.Errorf("the default ideal is %v, want DescribeSecret's 38 calls in 0.9s", b)
	}
}

// The ideal lower bound of a scope is what the fastest client makes of
// it: one that sends a call as soon as the estate's bucket holds a token
// (it asks every 5 ms), its burst at once, none during a pause.
func TestIdealIsTheFastestClient(t *testing.T) {
	sc := estate.Scope{Account: "111111111111", Region: "eu-west-1", Service: "secretsmanager", Action: "DescribeSecret"}
	const poll = 5 * time.Millisecond
	for _, tc := range []struct {
		lim   estate.Limit
		pause time.Duration
	}{
		{estate.Limit{Rate: 20, Burst: 20}, 0},
		{estate.Limit{Rate: 4, Burst: 5}, 0},
		{estate.Limit{Rate: 2, Burst: 2}, 3 * time.Second},
		{estate.Limit{Rate: 1, Burst: 50}, time.Second}, // more burst than calls
	} {
		t.Run(fmt.Sprintf("%g rps burst %d pause %s", tc.lim.Rate, tc.lim.Burst, tc.pause), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				est := estate.New(estate.Config{Sizes: testSizes})
				est.SetLimit(estate.Scope{}, tc.lim)
				start := time.Now()
				if tc.pause > 0 {
					est.Pause(sc, tc.pause)
				}
				b := (&scanner{est: est}).ideal(start, func(s estate.Scope) bool { return s == sc })
				for served := 0; served < testSizes.Secrets; {
					w := httptest.NewRecorder()
					est.ServeHTTP(w, describeSecret(sc))
					if strings.Contains(w.Body.String(), "ThrottlingException") {
						time.Sleep(poll)
						continue
					}
					served++
				}
				fastest := time.Since(start)
				if b.d > fastest || fastest-b.d > poll {
					t.Errorf("the fastest client took %s, the ideal lower bound is %s", fastest, b)
				}
			})
		})
	}
}

// describeSecret is a DescribeSecret request to sc as the SDK signs it
// (the estate checks no signature).
func describeSecret(sc estate.Scope) *http.Request {
	r := httptest.NewRequest("POST", "/", strings.NewReader(`{"SecretId":"none"}`))
	r.Header.Set("X-Amz-Target", "secretsmanager.DescribeSecret")
	r.Header.Set("Content-Type", "application/x-amz-json-1.1")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+estate.AccessKeyID(sc.Account)+"/20260101/"+sc.Region+"/"+sc.Service+
		"/aws4_request, SignedHeaders=host;x-amz-date, Signature=00")
	return r
}

// Without a knob every planned call succeeds, and no ledger records a
// loss.
func TestDefaultScenario(t *testing.T) {
	report, runs := scan(t, testOptions()(t))
	r := runs[0]
	if r.outcomes[outcomeOK] != total(plan(testSizes)) || strings.Contains(report, "degraded tasks") {
		t.Errorf("outcomes %v", r.outcomes)
	}
	if strings.Contains(report, "unaffected scopes") {
		t.Error("a scenario without knobs reports unaffected scopes")
	}
	var stderr strings.Builder
	if code := status(runs, &stderr); code != 0 || stderr.Len() != 0 {
		t.Errorf("a whole inventory: exit status %d, stderr %q; want 0 and nothing", code, stderr.String())
	}
}

// The command's own way, the estate on a loopback port in real time,
// scans as the in-process estate does.
func TestLoopbackScenario(t *testing.T) {
	o := testOptions()(t)
	o.inProcess = false
	_, runs := scan(t, o)
	if r := runs[0]; r.outcomes[outcomeOK] != total(plan(testSizes)) {
		t.Errorf("outcomes %v", r.outcomes)
	}
}

// -limit slows every action of the estate down; the ideal follows it.
func TestLimitScenario(t *testing.T) {
	report, runs := scan(t, testOptions("-limit", "12")(t))
	if c := estateCount(runs[0], estate.Scope{}); c.Throttled == 0 {
		t.Errorf("the estate throttled nothing at 12 rps: %+v", c)
	}
	// 22 calls at 12 rps, the first 12 at once.
	if !strings.Contains(report, "  ideal lower bound   0.8s (secretsmanager:DescribeSecret@") ||
		!strings.Contains(report, "22 calls at 12 rps, burst 12)") {
		t.Error("the ideal is not 22 DescribeSecret calls at 12 rps, burst 12")
	}
}

const pausedScope = "secretsmanager:DescribeSecret@111111111111/us-east-1"

// A paused scope answers with Retry-After until the pause ends; the
// report says when the other scopes were done.
func TestPauseScenario(t *testing.T) {
	report, runs := scan(t, testOptions("-pause", pausedScope+"=2s")(t))
	sel, _ := estate.ParseScope(pausedScope)
	if c := estateCount(runs[0], sel); c.Throttled == 0 {
		t.Errorf("the paused scope was not throttled: %+v", c)
	}
	if runs[0].makespan < 2*time.Second {
		t.Errorf("the scan ended within the pause, at %s", runs[0].makespan)
	}
	if !strings.Contains(report, "  unaffected scopes   done at "+secs(runs[0].unaffected)+", ideal ") {
		t.Error("no line for the unaffected scopes")
	}
}

// Task deadlines shorter than the pause lose the paused scope's calls,
// and only its: the scan does not wait for the pause.
func TestPauseWithDeadlinesScenario(t *testing.T) {
	_, runs := scan(t, testOptions("-pause", pausedScope+"=3s", "-task-timeout", "500ms")(t))
	r := runs[0]
	for name, c := range r.colls {
		if failed := c.failed.Load(); (name == "111111111111/secretsmanager") != (failed > 0) {
			t.Errorf("%s: %d failed call(s); want failures in the paused scope's collection only", name, failed)
		}
	}
	if r.makespan >= 3*time.Second {
		t.Errorf("the scan waited for the pause: makespan %s", r.makespan)
	}
}

// The second run of -runs 2 starts inside the first run's pause, on the
// same governor, with stats and ledgers of its own.
func TestSecondRunInsidePause(t *testing.T) {
	report, runs := scan(t, testOptions("-pause", pausedScope+"=3s", "-task-timeout", "300ms", "-runs", "2")(t))
	sel, _ := estate.ParseScope(pausedScope)
	sc := estate.Scope{Account: "111111111111", Region: "us-east-1", Service: "secretsmanager", Action: "DescribeSecret"}
	if until := runs[0].s.est.PausedUntil(sc); !runs[1].start.Before(until) || !sel.Matches(sc) {
		t.Errorf("run 2 started at %s, the pause ended at %s", runs[1].start.Format(time.StampMilli), until.Format(time.StampMilli))
	}
	if runs[0].stats == runs[1].stats || runs[0].colls["111111111111/secretsmanager"].ledger == runs[1].colls["111111111111/secretsmanager"].ledger {
		t.Error("the runs share stats or ledgers")
	}
	if !strings.Contains(report, "\nrun 2\n") {
		t.Error("no report of run 2")
	}
}

// The scope pool (package pool) runs every scenario: each planned call
// made once, the calls a complete scan makes all successful, and the
// scopes no knob touched done before the knobbed ones are. A first call
// the pool's admission refused (the scope busy after all: here the
// account's concurrency cap, two calls in flight) was not made: its task
// runs again, and the refusal is no failed call.
func TestScopePoolScenarios(t *testing.T) {
	dead := "secretsmanager:DescribeSecret@222222222222/eu-west-1"
	for _, tc := range []struct {
		name     string
		args     []string
		gov      *resilience.Config // nil: testOptions's
		complete bool               // every planned call succeeds
		made     bool               // every planned call is made (a lost page loses the rest of its listing)
	}{
		{"default", nil, nil, true, true},
		{"limit", []string{"-limit", "12"}, nil, true, true},
		{"pause", []string{"-pause", pausedScope + "=2s"}, nil, true, true},
		{"pause with deadlines", []string{"-pause", pausedScope + "=3s", "-task-timeout", "500ms"}, nil, false, false},
		{"dead", []string{"-dead", dead}, nil, false, true},
		// Tasks race for the slots: on more than one CPU some first calls
		// find their account's slots taken after the pool saw one free.
		{"two calls in flight per account", nil, &resilience.Config{AWS: resilience.ProviderConfig{MinRPS: 10, MaxConcurrency: 2, Services: slowBuiltins}}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(append([]string{"-pool", "scope"}, tc.args...)...)(t)
			if tc.gov != nil {
				o.gov = tc.gov
			}
			_, runs := scan(t, o)
			r, planned := runs[0], total(plan(testSizes))
			made := 0
			for _, n := range r.outcomes {
				made += n
			}
			if tc.made && made != planned {
				t.Errorf("%d calls made, %d planned: %v", made, planned, r.outcomes)
			}
			if tc.complete && r.outcomes[outcomeOK] != planned {
				t.Errorf("%d calls succeeded, %d planned: %v", r.outcomes[outcomeOK], planned, r.outcomes)
			}
		})
	}
}

// A first call the scope pool's admission refuses before sending is no
// call made and nothing lost: the pool runs its task again, and the scan
// counts it apart, not as a failed call. Here another caller takes the
// account's only slot the moment the pool hands a worker the first task
// of a scope, and holds it for 100 ms.
func TestScopePoolDeferredFirstCall(t *testing.T) {
	o := testOptions("-pool", "scope")(t)
	o.gov = &resilience.Config{AWS: resilience.ProviderConfig{MinRPS: 10, MaxConcurrency: 1, Services: slowBuiltins}}
	var taken atomic.Bool
	o.beforeTask = func(gov *resilience.Governor, sc resilience.Scope) {
		if sc.Account != "111111111111" || sc.Operation != "DescribeSecret" || !taken.CompareAndSwap(false, true) {
			return
		}
		other, err := gov.Begin(context.Background(), sc)
		if err == nil {
			err = other.Enter(context.Background())
		}
		if err != nil {
			t.Errorf("the other caller: %v", err)
			return
		}
		time.AfterFunc(100*time.Millisecond, func() { other.End(nil); other.Release() })
	}
	report, runs := scan(t, o)
	r, planned := runs[0], total(plan(testSizes))
	if r.deferred.Load() == 0 {
		t.Fatalf("no first call was deferred (the slot taken: %t)", taken.Load())
	}
	if r.outcomes[outcomeOK] != planned || len(r.outcomes) != 1 {
		t.Errorf("%v, want %d calls, all ok", r.outcomes, planned)
	}
	if !strings.Contains(report, "  calls               315 of 315 planned: 315 ok\n  deferred            ") {
		t.Error("the report does not show the deferred first calls apart from the calls made")
	}
}

// A first call the scope pool deferred whose task the cancellation then
// dropped is a task the pool did not run again: the report's deferred
// line, which says the pool ran their tasks again, does not count it
// (the tasks line counts it dropped unrun). Here one worker runs the
// scan, another caller takes account 111111111111's only slot as the
// pool hands a worker that account's first DescribeSecret, for 100 ms,
// and the scan is cancelled 30 ms later: that task's first call is
// deferred, and the task dropped before the slot is free. Before, the
// report said "deferred 1 first call(s) refused before sending [...];
// the pool ran their tasks again".
func TestCancelledScanCountsNoDeferredTaskItDropped(t *testing.T) {
	o := testOptions("-pool", "scope", "-workers", "1")(t)
	o.gov = &resilience.Config{AWS: resilience.ProviderConfig{MinRPS: 10, MaxConcurrency: 1, Services: slowBuiltins}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var taken atomic.Bool
	var laterRuns atomic.Int64 // tasks of the account run after the slot was taken
	o.beforeTask = func(gov *resilience.Governor, sc resilience.Scope) {
		if sc.Account != "111111111111" {
			return
		}
		if taken.Load() {
			laterRuns.Add(1)
			return
		}
		if sc.Operation != "DescribeSecret" || !taken.CompareAndSwap(false, true) {
			return
		}
		other, err := gov.Begin(context.Background(), sc)
		if err == nil {
			err = other.Enter(context.Background())
		}
		if err != nil {
			t.Errorf("the other caller: %v", err)
			return
		}
		time.AfterFunc(100*time.Millisecond, func() { other.End(nil); other.Release() })
		time.AfterFunc(30*time.Millisecond, cancel)
	}
	var out bytes.Buffer
	var runs []*scanRun
	var err error
	synctest.Test(t, func(*testing.T) { runs, err = run(ctx, &out, nil, o) })
	report := out.String()
	t.Log("\n" + report)
	if !errors.Is(err, context.Canceled) || len(runs) != 1 {
		t.Fatalf("run: %v, %d runs; want the cancellation and the run it cut", err, len(runs))
	}
	r := runs[0]
	if !taken.Load() || r.rerun == 0 || laterRuns.Load() != 0 {
		t.Fatalf("setup: slot taken %t, %d task(s) queued again by the pool, %d task(s) of the account run after; want a task deferred and none run after",
			taken.Load(), r.rerun, laterRuns.Load())
	}
	var n int64
	if i := strings.Index(report, "  deferred            "); i >= 0 {
		if _, err := fmt.Sscanf(report[i:], "  deferred            %d first call(s)", &n); err != nil {
			t.Fatalf("deferred line: %v", err)
		}
	}
	if n != 0 || r.deferred.Load() != 0 {
		t.Errorf("the report says the pool ran the tasks of %d deferred first call(s) again (counted %d); it ran none: the task was dropped unrun", n, r.deferred.Load())
	}
}

// A task that panics under the scope pool loses the rest of its work
// (here a listing and the detail tasks it would have submitted), and the
// scan says so: the loss is in its collection's ledger, which the report
// lists among the degraded tasks, while the scan goes on. Before, the
// pool recovered the panic, Run dropped it with Wait's error, and the run
// reported nothing lost.
func TestScopePoolTaskPanicIsInTheLedger(t *testing.T) {
	o := testOptions("-pool", "scope")(t)
	var panicked atomic.Bool
	o.beforeTask = func(_ *resilience.Governor, sc resilience.Scope) {
		if sc.Account == "111111111111" && sc.Operation == "ListTables" && panicked.CompareAndSwap(false, true) {
			panic("listing tables")
		}
	}
	report, runs := scan(t, o)
	c := runs[0].colls["111111111111/dynamodb"]
	if !panicked.Load() || c.ledger.Count(resilience.LossPanicked) != 1 {
		t.Fatalf("the task panicked: %t; ledger %q, want 1 panicked", panicked.Load(), c.ledger.Describe())
	}
	if !strings.Contains(report, "  degraded tasks\n    111111111111/dynamodb: 0 failed call(s) (); ") || !strings.Contains(report, "listing tables") {
		t.Error("the report does not list the panicked task's collection as degraded")
	}
}

// A dead action fails every call of its scope; the others succeed.
func TestDeadScenario(t *testing.T) {
	_, runs := scan(t, testOptions("-dead", "secretsmanager:DescribeSecret@222222222222/eu-west-1")(t))
	r := runs[0]
	if got := r.colls["222222222222/secretsmanager"].failed.Load(); got != int64(testSizes.Secrets) {
		t.Errorf("%d calls of the dead scope failed, want %d", got, testSizes.Secrets)
	}
	if want := total(plan(testSizes)) - testSizes.Secrets; r.outcomes[outcomeOK] != want {
		t.Errorf("%d calls succeeded, want %d", r.outcomes[outcomeOK], want)
	}
	// The command exits with exitPartial, and says why: a script that
	// runs the scan learns its inventory is partial from the status.
	var stderr strings.Builder
	want := fmt.Sprintf("scan: partial inventory (run 1: %d failed call(s), %d loss(es) in its ledgers); see each run's degraded tasks\n", testSizes.Secrets, testSizes.Secrets)
	if code := status(runs, &stderr); code != exitPartial || stderr.String() != want {
		t.Errorf("a scan that lost the dead scope's calls: exit status %d, stderr %q; want %d, %q", code, stderr.String(), exitPartial, want)
	}
}

func TestFlags(t *testing.T) {
	o, err := parseFlags([]string{"-limit", "2", "-limit", "iam:GetRole=0.5", "-dead", "secretsmanager:DescribeSecret@111111111111/us-east-1",
		"-pause", "dynamodb@222222222222=1m", "-task-timeout", "10s", "-workers", "4", "-runs", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.limits) != 2 || o.limits[0].lim != (estate.Limit{Rate: 2, Burst: 2}) || o.limits[1].sel.Action != "GetRole" ||
		o.limits[1].lim != (estate.Limit{Rate: 0.5, Burst: 1}) {
		t.Errorf("limits %+v", o.limits)
	}
	if len(o.dead) != 1 || o.dead[0].Region != "us-east-1" || len(o.pauses) != 1 || o.pauses[0].d != time.Minute ||
		o.pauses[0].sel.Account != "222222222222" || o.taskTimeout != 10*time.Second || o.workers != 4 || o.runs != 2 {
		t.Errorf("options %+v", o)
	}
	for _, bad := range [][]string{{"-pool", "lifo"}, {"-pause", "ec2=1s=2s"}, {"-pause", "60s"}, {"-limit", "0"},
		{"-dead", "ec2@1"}, {"-workers", "0"}, {"extra"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := parseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

// A scope given to -limit, -dead or -pause must select a scope the scan
// calls: one that selects none (a service, an action or an account the
// estate has not, IAM in aws-global where the scan calls it in us-east-1)
// would leave the scenario it names unmade, the scan run as if the flag
// were not given.
func TestFlagsScopeSelectingNothingIsAnError(t *testing.T) {
	for _, bad := range [][]string{{"-dead", "ec3"}, {"-dead", "iam@111111111111/aws-global"}, {"-pause", "secretsmanager:ListSecret=1m"},
		{"-limit", "ec2:DescribeVolumes=5"}, {"-limit", "dynamodb@999999999999=5"}} {
		_, err := parseFlags(bad, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "selects none of the scopes the scan calls") {
			t.Errorf("%q: error %v", bad, err)
		}
	}
	for _, good := range [][]string{{"-dead", "iam"}, {"-dead", "@222222222222/eu-west-1"}, {"-pause", "iam:GetRole@111111111111/us-east-1=1m"},
		{"-limit", "*:DescribeTable=5"}} {
		if _, err := parseFlags(good, io.Discard); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}

// The FIFO pool runs every task and every task they submit, and never
// runs more than its workers at once.
func TestFIFORunsSubmittedTasks(t *testing.T) {
	const workers = 3
	var mu sync.Mutex
	ran, inFlight, most := 0, 0, 0
	enter := func() {
		mu.Lock()
		defer mu.Unlock()
		ran++
		inFlight++
		most = max(most, inFlight)
	}
	leave := func() {
		mu.Lock()
		defer mu.Unlock()
		inFlight--
	}
	var leaf Task
	leaf = Task{Run: func(context.Context, func(Task)) { enter(); time.Sleep(time.Millisecond); leave() }}
	var tasks []Task
	for range 10 {
		tasks = append(tasks, Task{Run: func(_ context.Context, submit func(Task)) {
			enter()
			for range 5 {
				submit(leaf)
			}
			leave()
		}})
	}
	synctest.Test(t, func(*testing.T) { // the leaves' sleeps in virtual time: every worker in one at once
		pools["fifo"](workers, nil).Run(context.Background(), tasks)
	})
	if ran != 60 || most != workers {
		t.Errorf("ran %d tasks, at most %d at once; want 60, %d", ran, most, workers)
	}
}

// The progress line is cleared last: no tick of a run's progress comes
// after the run has ended and cleared it (it would print a progress line
// over the report). Here each progress line takes a second to write, as
// on a slow terminal; before, a tick still writing when the run ended
// wrote its line after the clear.
func TestProgressIsClearedLast(t *testing.T) {
	o := testOptions("-limit", "2")(t) // seconds long: ticks come
	var mu sync.Mutex
	var lines []string
	synctest.Test(t, func(t *testing.T) {
		progress := func(line string) {
			if line != "" {
				time.Sleep(time.Second)
			}
			mu.Lock()
			lines = append(lines, line)
			mu.Unlock()
		}
		if _, err := run(context.Background(), io.Discard, progress, o); err != nil {
			t.Fatal(err)
		}
	})
	if len(lines) < 2 || lines[len(lines)-1] != "" {
		t.Fatalf("progress lines %q: want ticks, the clear last", lines)
	}
}

// The scope pool queues each task under the scope its calls are governed
// in (cloudgaws.Scope): IAM's under aws-global, where cloudgaws governs
// the calls of a global service, and not under us-east-1, the region its
// client is made in, a scope no call takes, whose tokens and breaker the
// pool would ask about in vain.
func TestScopePoolTasksNameTheScopesOfTheirCalls(t *testing.T) {
	o := testOptions("-pool", "scope")(t)
	var mu sync.Mutex
	tasks := map[resilience.Scope]bool{}
	o.beforeTask = func(_ *resilience.Governor, sc resilience.Scope) {
		mu.Lock()
		defer mu.Unlock()
		sc.Operation = ""
		tasks[sc] = true
	}
	_, runs := scan(t, o)
	r := runs[0]
	sum := r.s.gov.Summary(r.stats)
	mu.Lock()
	defer mu.Unlock()
	for sc := range tasks {
		if _, ok := sum.Scopes[sc]; !ok {
			t.Errorf("tasks queued under %s, whose calls went elsewhere", sc)
		}
		if sc.Service == "iam" && sc.Region != "aws-global" {
			t.Errorf("an IAM task queued under %s", sc)
		}
	}
	if len(tasks) != len(sum.Scopes) {
		t.Errorf("tasks queued under %d scopes, their calls governed in %d", len(tasks), len(sum.Scopes))
	}
}

// denyTransport answers the first DescribeSecret of account with
// AccessDeniedException, a fatal answer: a failed call that no ledger
// counts (an answer, not a loss), the silent partial result the report
// exists to show. denied counts the denials.
func denyTransport(account string, denied *atomic.Int64) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Header.Get("X-Amz-Target") == "secretsmanager.DescribeSecret" &&
				strings.Contains(r.Header.Get("Authorization"), "Credential="+estate.AccessKeyID(account)+"/") && denied.CompareAndSwap(0, 1) {
				if r.Body != nil {
					r.Body.Close()
				}
				w := httptest.NewRecorder()
				w.Header().Set("Content-Type", "application/x-amz-json-1.1")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"__type":"AccessDeniedException","message":"not authorized to perform secretsmanager:DescribeSecret"}`)
				resp := w.Result()
				resp.Request = r
				return resp, nil
			}
			return next.RoundTrip(r)
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A scan cancelled midway (Ctrl-C) accounts for every task: done, ended by
// a failed call, or dropped unrun by the cancellation; and for every call:
// made (the cancellation ending some), or never made. The silent partial
// results still show the failed call no ledger counted, though the
// ledger of its collection also holds the tasks the cancellation dropped
// (a task dropped is no failed call, and must not offset one). Before, the
// report said nothing of the dropped tasks, and the silent count, failed
// calls less the ledger's losses, came to 0: the denied call was hidden
// behind the dropped tasks' entries.
func TestCancelledScanAccountsForEveryTask(t *testing.T) {
	for _, p := range []string{"fifo", "scope"} {
		t.Run(p, func(t *testing.T) {
			o := testOptions("-pool", p, "-limit", "4")(t)
			var denied atomic.Int64
			o.transport = denyTransport("111111111111", &denied)
			var out bytes.Buffer
			var runs []*scanRun
			var err error
			synctest.Test(t, func(*testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				time.AfterFunc(2*time.Second, cancel)
				runs, err = run(ctx, &out, nil, o)
			})
			report := out.String()
			t.Log("\n" + report)
			if !errors.Is(err, context.Canceled) || len(runs) != 1 {
				t.Fatalf("run: %v, %d runs; want the cancellation and the run it cut", err, len(runs))
			}
			r := runs[0]
			if denied.Load() != 1 || r.outcomes[outcomeOther] != 1 {
				t.Fatalf("denied %d, outcomes %v: want the one denied call", denied.Load(), r.outcomes)
			}
			made := 0
			for _, n := range r.outcomes {
				made += n
			}
			// A task ends at its first failed call (a listing's page, a
			// detail task's one call): one failed task per failed call. The
			// ledgers' cancelled calls are the calls the cancellation ended
			// and the tasks it dropped, one each.
			var failed, dropped int64
			for _, c := range r.colls {
				failed += c.failed.Load()
				dropped += int64(c.ledger.Count(resilience.LossCancelled) - c.fails[outcomeCanceled])
			}
			if dropped == 0 || r.outcomes[outcomeCanceled] == 0 {
				t.Errorf("the cancellation dropped %d task(s) and ended %d call(s); want some of each", dropped, r.outcomes[outcomeCanceled])
			}
			var submitted, done, failedTasks, droppedTasks int64
			i := strings.Index(report, "  tasks               ")
			if i < 0 {
				t.Errorf("the report has no tasks line")
			} else if _, err := fmt.Sscanf(report[i:], "  tasks               %d submitted: %d done, %d with a failed call, %d dropped unrun\n",
				&submitted, &done, &failedTasks, &droppedTasks); err != nil {
				t.Errorf("tasks line: %v", err)
			} else if failedTasks != failed || droppedTasks != dropped || done+failedTasks+droppedTasks != submitted {
				t.Errorf("tasks: %d submitted, %d done, %d failed, %d dropped; want %d failed (one per failed call), %d dropped (the ledgers' cancelled tasks), adding up",
					submitted, done, failedTasks, droppedTasks, failed, dropped)
			}
			if line := fmt.Sprintf("  cancelled           at 2.0s: %d call(s) ended by the cancellation, %d planned call(s) never made\n",
				r.outcomes[outcomeCanceled], total(plan(testSizes))-made); !strings.Contains(report, line) {
				t.Errorf("the report has no line %q", line)
			}
			if line := "  silent partial results: 1 failed call(s) no ledger counted\n"; !strings.Contains(report, line) {
				t.Errorf("the report has no line %q: the denied call is hidden", line)
			}
		})
	}
}

// A call that panics under the scope pool is in its collection's ledger
// once, as the call the governor saw panic (the pool, which recovers the
// task's panic, records nothing more), and it is no failed call: it must
// not offset a failed call that no ledger counts. Here the first DescribeTable of an
// account panics in the transport and the second is denied. Before, the
// silent partial results subtracted one ledger entry per panicked task,
// and the denied call was hidden behind the panic's second entry (0
// silent).
func TestScopePoolPanicInACallHidesNoFailedCall(t *testing.T) {
	o := testOptions("-pool", "scope")(t)
	var calls atomic.Int64
	o.transport = func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Header.Get("X-Amz-Target") != "DynamoDB_20120810.DescribeTable" ||
				!strings.Contains(r.Header.Get("Authorization"), "Credential="+estate.AccessKeyID("111111111111")+"/") {
				return next.RoundTrip(r)
			}
			switch calls.Add(1) {
			case 1:
				panic("a transport bug")
			case 2:
				if r.Body != nil {
					r.Body.Close()
				}
				w := httptest.NewRecorder()
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#AccessDeniedException","message":"not authorized to perform dynamodb:DescribeTable"}`)
				resp := w.Result()
				resp.Request = r
				return resp, nil
			}
			return next.RoundTrip(r)
		})
	}
	var out bytes.Buffer
	var runs []*scanRun
	var err error
	synctest.Test(t, func(*testing.T) { runs, err = run(context.Background(), &out, nil, o) })
	report := out.String()
	t.Log("\n" + report)
	if err != nil || len(runs) != 1 {
		t.Fatalf("run: %v, %d runs", err, len(runs))
	}
	c := runs[0].colls["111111111111/dynamodb"]
	if c.panicked.Load() != 1 || c.failed.Load() != 1 || c.ledger.Lost() != c.ledger.Count(resilience.LossPanicked) {
		t.Fatalf("%d task(s) panicked, %d call(s) failed, ledger %q: want a panic and a denied call, no other loss",
			c.panicked.Load(), c.failed.Load(), c.ledger.Describe())
	}
	if line := "  silent partial results: 1 failed call(s) no ledger counted\n"; c.silent() != 1 || !strings.Contains(report, line) {
		t.Errorf("the collection's silent partial results: %d, want 1 (the denied call); the report has no line %q", c.silent(), line)
	}
}

// With -pool scope the progress line says where the pool's work stands
// (package pool's Progress: its tasks queued and when they should be
// done, its tasks running, its scopes waiting) after the calls made; a
// pool that cannot say (-pool fifo) shows the calls made alone.
func TestTheProgressLineShowsThePoolsState(t *testing.T) {
	for _, name := range []string{"scope", "fifo"} {
		t.Run(name, func(t *testing.T) {
			o := testOptions("-pool", name, "-limit", "2")(t) // seconds long: ticks come
			var mu sync.Mutex
			var lines []string
			synctest.Test(t, func(t *testing.T) {
				progress := func(line string) {
					mu.Lock()
					lines = append(lines, line)
					mu.Unlock()
				}
				if _, err := run(context.Background(), io.Discard, progress, o); err != nil {
					t.Fatal(err)
				}
			})
			state := regexp.MustCompile(`^run 1: \S+, \d+ of \d+ calls made; \d+ queued \(~\S+ at current rates\), \d+ running, (1 scope|(0|[2-9]|\d\d+) scopes) waiting(, \d+ open)?$`)
			plain := regexp.MustCompile(`^run 1: \S+, \d+ of \d+ calls made$`)
			// A tick between the pool's end and the run's has no pool to
			// ask: the calls made alone.
			withState, after := 0, 0
			for _, l := range lines {
				switch {
				case l == "":
				case state.MatchString(l) && after == 0:
					withState++
				case plain.MatchString(l):
					after++
				default:
					t.Errorf("progress line %q", l)
				}
			}
			if name == "scope" && (withState < 2 || after > 1) || name == "fifo" && (withState != 0 || after < 2) {
				t.Errorf("%d ticks showing the pool's state, then %d without: %q", withState, after, lines)
			}
		})
	}
}

// A command line the flag package cannot read is written to stderr once,
// with the usage, by the flag package; the others (a value out of range,
// a scope that selects nothing) once, by the command. Each exits 1.
// Before, the flag package's errors were written twice, the second time
// after the usage.
func TestAFlagErrorIsWrittenOnce(t *testing.T) {
	for args, want := range map[string]string{
		"-limit -3":      `invalid value "-3" for flag -limit`,
		"-pool":          `flag needs an argument: -pool`,
		"-workers 0":     `-workers and -runs must be at least 1`,
		"-dead ec3":      `selects none of the scopes the scan calls`,
		"-seed -1 extra": `invalid value "-1" for flag -seed`,
	} {
		var stderr bytes.Buffer
		code := command(context.Background(), strings.Fields(args), io.Discard, &stderr, nil)
		if n := strings.Count(stderr.String(), want); code != 1 || n != 1 {
			t.Errorf("%s: exit %d, %q written %d times; want exit 1, once:\n%s", args, code, want, n, stderr.String())
		}
	}
	var stderr bytes.Buffer
	if code := command(context.Background(), []string{"-h"}, io.Discard, &stderr, nil); code != 0 || !strings.Contains(stderr.String(), "Usage of scan") {
		t.Errorf("-h: exit %d, %q; want the usage and exit 0", code, stderr.String())
	}
}

// The progress line fits the terminal: a line as wide as the terminal or
// wider would wrap, and the carriage return and erase that rewrite it at
// the next tick reach only its last row, leaving a row behind at each
// tick. It is cut to a column less than the width (80 when the width is
// unknown), marked with an ellipsis; a line that fits is written whole.
func TestTheProgressLineFitsTheTerminal(t *testing.T) {
	line := "run 1: 5.0s, 319 of 726 calls made; 391 queued (~21.2s at current rates), 16 running, 7 scopes waiting"
	for _, c := range []struct {
		width int
		want  string
	}{
		{120, line},
		{80, line[:78] + "…"},
		{0, line[:78] + "…"},
		{40, line[:38] + "…"},
	} {
		var out bytes.Buffer
		progressLine(&out, func() int { return c.width })(line)
		if got := out.String(); got != "\r\033[K"+c.want {
			t.Errorf("width %d: wrote %q, want %q", c.width, got, "\r\033[K"+c.want)
		}
	}
}
