// Command scan runs an inventory scan of a fake AWS estate that throttles
// like AWS, with the AWS SDK for Go v2 under the governor, and prints how
// long it took against the ideal, what every call came to, and what the
// coverage ledgers recorded.
//
// The estate (package estate) serves 3 accounts x 3 regions on a loopback
// port: EC2, IAM, Secrets Manager and DynamoDB, 726 calls a scan. Each
// account's clients come from one aws.Config governed by cloudgaws.Install;
// the scan lists each service with the SDK's paginators and describes
// every listed secret, table and role, each listing and each detail call a
// task of a worker pool. Each run records its calls in a resilience.Stats,
// and each account's collection of a service in a resilience.Ledger.
//
//	go run ./examples/scan [-pool fifo] [-workers 16] [-runs 1] [-task-timeout 10s]
//	                       [-limit [scope=]rps]... [-dead scope]... [-pause scope=60s]...
//	                       [-seed 1] [-config cloudg.yaml]
//
// A scope is written service:Action@account/region, each part optional
// ("secretsmanager:DescribeSecret@111111111111/us-east-1",
// "secretsmanager@222222222222/eu-west-1"). -limit sets the estate's rate
// (and burst) for every action, or for the scope's; -dead throttles a scope
// for good; -pause throttles it with a Retry-After until the duration has
// passed from the first run's start. For each run the command prints the
// makespan, the ideal lower bound (each scope's calls after its pause, its
// burst at once and the rest at its rate; the largest), when the last task
// of the scopes no knob touched returned, the calls per outcome, the first
// calls the scope pool deferred (refused before sending, their tasks run
// again: no call made), the run's stats, the degraded collections with
// their ledgers, and the silent partial results: failed calls that no
// ledger counted. A progress line goes to stderr when it is a terminal
// (cut to its width): the calls made, and with -pool scope the pool's tasks queued (with when
// they should be done at the scopes' current rates), running, and its
// scopes waiting.
// Ctrl-C cancels the scan: the tasks still queued are dropped unrun (each
// in its ledger as cancelled), and the report of the run it cut also
// counts the tasks done, ended at a failed call and dropped, the calls
// the cancellation ended and the planned calls never made.
//
// The command exits with 0 when every planned call succeeded, 3 when the
// scans ran but a run's inventory is partial (a call failed, its loss in
// a ledger), and 1 after an error (a cancelled scan among them).
//
// It needs no credentials and sends nothing anywhere.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/examples/scan/estate"
	"github.com/cloudg/cloudg/resilience"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := command(ctx, os.Args[1:], os.Stdout, os.Stderr, progressTo(os.Stderr))
	stop()
	os.Exit(code)
}

// The command's exit statuses besides 0, every planned call a success.
const (
	exitError   = 1 // an error, the scan's cancellation among them
	exitPartial = 3 // a run's inventory is partial: a call failed, its loss in a ledger
)

// command runs the command with the arguments args, its report to stdout,
// its progress line to progress (nil: none), and returns its exit status:
// 0; exitError after an error, written to stderr once (the flag package
// writes its own, with the usage); or exitPartial when the scans ran but
// a run lost calls (see status), so that a script running the scan tells
// a partial inventory from a whole one without reading the report.
func command(ctx context.Context, args []string, stdout, stderr io.Writer, progress func(string)) int {
	o, err := parseFlags(args, stderr)
	var written *flagError
	var runs []*scanRun
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &written):
		return exitError
	case err == nil:
		runs, err = run(ctx, stdout, progress, o)
	}
	if err != nil {
		fmt.Fprintln(stderr, "scan:", err)
		return exitError
	}
	return status(runs, stderr)
}

// status is the exit status of runs that all ran to their end: 0, or
// exitPartial when a run's inventory is partial (a collection's ledger
// recorded a lost call, or a call failed), which it says on stderr.
func status(runs []*scanRun, stderr io.Writer) int {
	var partial []string
	for i, r := range runs {
		var lost, failed int64
		for _, c := range r.colls {
			lost += int64(c.ledger.Lost())
			failed += c.failed.Load()
		}
		if lost > 0 || failed > 0 {
			partial = append(partial, fmt.Sprintf("run %d: %d failed call(s), %d loss(es) in its ledgers", i+1, failed, lost))
		}
	}
	if len(partial) == 0 {
		return 0
	}
	fmt.Fprintf(stderr, "scan: partial inventory (%s); see each run's degraded tasks\n", strings.Join(partial, "; "))
	return exitPartial
}

// flagError is an error of the flag package's, which it has written with
// the usage.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

// pauseKnob is a -pause: sel throttled with a Retry-After for d.
type pauseKnob struct {
	sel estate.Scope
	d   time.Duration
}

// limitKnob is a -limit: the actions sel selects at lim.
type limitKnob struct {
	sel estate.Scope
	lim estate.Limit
}

// options are the command's settings.
type options struct {
	pool        string
	workers     int
	runs        int
	taskTimeout time.Duration
	seed        uint64
	config      string
	limits      []limitKnob
	dead        []estate.Scope
	pauses      []pauseKnob

	// Set by tests only: the estate's sizes (zero: the defaults), the
	// governor's configuration (nil: the -config file's or the defaults),
	// more options for cloudgaws.Install, and whether the clients reach
	// the estate in-process (estate.Transport) rather than on a loopback
	// port, so that a scan can run in a testing/synctest bubble.
	sizes     estate.Sizes
	gov       *resilience.Config
	awsOpts   []cloudgaws.Option
	inProcess bool
	// beforeTask, if not nil, is called as each task starts, before its
	// first call, with the governor and the task's scope.
	beforeTask func(*resilience.Governor, resilience.Scope)
	// transport, if not nil, wraps the in-process estate's transport.
	transport func(http.RoundTripper) http.RoundTripper
}

// parseFlags reads the command line.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("scan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.pool, "pool", "fifo", "how tasks are run: "+strings.Join(poolNames(), ", "))
	fs.IntVar(&o.workers, "workers", 16, "tasks at once")
	fs.IntVar(&o.runs, "runs", 1, "scans in a row, in the same process (one governor)")
	fs.DurationVar(&o.taskTimeout, "task-timeout", 0, "deadline of each task, from its start (0: none)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the estate's contents")
	fs.StringVar(&o.config, "config", "", "a YAML or JSON file with the governor's ratelimit section and cloudgaws's aws section")
	fs.Func("limit", "`[scope=]rps`: the estate's rate and burst for every action, or the scope's (repeatable)", func(s string) error {
		sel, v, err := scopeValue(s, false)
		if err != nil {
			return err
		}
		rps, err := strconv.ParseFloat(v, 64)
		if err != nil || !(rps > 0) || math.IsInf(rps, 0) {
			return fmt.Errorf("rate %q: want a number of requests a second > 0", v)
		}
		o.limits = append(o.limits, limitKnob{sel, estate.Limit{Rate: rps, Burst: max(1, int(math.Ceil(rps)))}})
		return nil
	})
	fs.Func("dead", "`scope` throttled for good (repeatable)", func(s string) error {
		sel, err := estate.ParseScope(s)
		if err == nil {
			o.dead = append(o.dead, sel)
		}
		return err
	})
	fs.Func("pause", "`scope=duration`: scope throttled with a Retry-After for the duration from the first run's start (repeatable)", func(s string) error {
		sel, v, err := scopeValue(s, true)
		if err != nil {
			return err
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("pause %q: want a duration > 0", v)
		}
		o.pauses = append(o.pauses, pauseKnob{sel, d})
		return nil
	})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, &flagError{err} // written by fs, with the usage
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if pools[o.pool] == nil {
		return o, fmt.Errorf("-pool %q: want one of %s", o.pool, strings.Join(poolNames(), ", "))
	}
	if o.workers < 1 || o.runs < 1 || o.taskTimeout < 0 {
		return o, errors.New("-workers and -runs must be at least 1, -task-timeout at least 0")
	}
	// A scope that selects nothing the scan calls (a typo, IAM's
	// aws-global) would leave its scenario unmade.
	scopes := plan(estate.Sizes{}) // every scope, whatever the sizes
	check := func(flag string, sel estate.Scope) error {
		for sc := range scopes {
			if sel.Matches(sc) {
				return nil
			}
		}
		return fmt.Errorf("-%s %s: selects none of the scopes the scan calls (%s in accounts %s, regions %s; iam in %s)",
			flag, sel, strings.Join(services, ", "), strings.Join(accounts, ", "), strings.Join(regions, ", "), globalRegion)
	}
	var err error
	for _, l := range o.limits {
		err = errors.Join(err, check("limit", l.sel))
	}
	for _, sel := range o.dead {
		err = errors.Join(err, check("dead", sel))
	}
	for _, p := range o.pauses {
		err = errors.Join(err, check("pause", p.sel))
	}
	if err != nil {
		return o, err
	}
	return o, nil
}

// scopeValue splits scope=value; without "=", the whole is the value and
// the scope selects everything, unless a scope is required.
func scopeValue(s string, required bool) (estate.Scope, string, error) {
	i := strings.LastIndexByte(s, '=')
	if i < 0 {
		if required {
			return estate.Scope{}, "", fmt.Errorf("%q: want scope=value", s)
		}
		return estate.Scope{}, s, nil
	}
	sel, err := estate.ParseScope(s[:i])
	return sel, s[i+1:], err
}

// progressTo returns the progress callback of a run, writing a line over
// itself to f, or nil when f is not a terminal.
func progressTo(f *os.File) func(string) {
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return progressLine(f, func() int { return termWidth(f) })
}

// progressLine returns a progress callback writing each line over the last
// to w, a terminal width() columns wide (0: unknown, taken as 80). A line
// is cut to a column less than the width: one that wrapped would leave its
// first row on the screen at each tick, as the carriage return and the
// erase that rewrite it reach only its last row.
func progressLine(w io.Writer, width func() int) func(string) {
	return func(line string) {
		cols := width()
		if cols <= 0 {
			cols = 80
		}
		if r := []rune(line); len(r) > cols-1 {
			line = string(r[:max(0, cols-2)]) + "…"
		}
		fmt.Fprintf(w, "\r\033[K%s", line)
	}
}

// run serves the estate, sets the scenario's knobs, and scans it o.runs
// times, printing each run's report to w; progress, if not nil, takes the
// progress line. It returns the runs.
func run(ctx context.Context, w io.Writer, progress func(string), o options) ([]*scanRun, error) {
	est := estate.New(estate.Config{Seed: o.seed, Sizes: o.sizes})
	for _, l := range o.limits {
		est.SetLimit(l.sel, l.lim)
	}
	for _, sel := range o.dead {
		est.SetDead(sel)
	}
	var rt http.RoundTripper = estate.Transport{Estate: est}
	if o.transport != nil {
		rt = o.transport(rt)
	}
	endpoint, httpClient := "http://estate.invalid", aws.HTTPClient(&http.Client{Transport: rt})
	if !o.inProcess {
		srv, err := estate.Start(est)
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		endpoint, httpClient = srv.URL, loopbackClient()
	}

	govCfg, awsOpts := resilience.Config{}, o.awsOpts
	if o.config != "" {
		var err error
		if govCfg, err = resilience.LoadConfig(o.config); err != nil {
			return nil, err
		}
		awsCfg, err := cloudgaws.LoadConfig(o.config)
		if err != nil {
			return nil, err
		}
		awsOpts = append([]cloudgaws.Option{cloudgaws.WithConfig(awsCfg)}, awsOpts...)
	}
	if o.gov != nil {
		govCfg = *o.gov
	}
	gov, err := resilience.NewGovernor(govCfg)
	if err != nil {
		return nil, err
	}
	clients, err := newClients(endpoint, httpClient, append([]cloudgaws.Option{cloudgaws.WithGovernor(gov)}, awsOpts...))
	if err != nil {
		return nil, err
	}
	s := &scanner{
		gov: gov, clients: clients, est: est, taskTimeout: o.taskTimeout,
		pool: pools[o.pool](o.workers, gov), beforeTask: o.beforeTask,
	}
	s.knobs = append(s.knobs, o.dead...)
	for _, p := range o.pauses {
		s.knobs = append(s.knobs, p.sel)
	}

	planned := total(plan(est.Sizes()))
	fmt.Fprintf(w, "scan: %d accounts x %d regions, %d calls planned; %s pool, %d workers, task timeout %s\n",
		len(accounts), len(regions), planned, o.pool, o.workers, timeoutString(o.taskTimeout))
	for _, l := range o.limits {
		fmt.Fprintf(w, "  limit %s: %g rps, burst %d\n", l.sel, l.lim.Rate, l.lim.Burst)
	}
	for _, sel := range o.dead {
		fmt.Fprintf(w, "  dead  %s\n", sel)
	}
	for _, p := range o.pauses {
		fmt.Fprintf(w, "  pause %s for %s from the first run's start\n", p.sel, p.d)
	}

	var runs []*scanRun
	for i := range o.runs {
		if i == 0 {
			for _, p := range o.pauses {
				est.Pause(p.sel, p.d)
			}
		}
		title := fmt.Sprintf("run %d", i+1)
		var tick func(int64, time.Duration)
		if progress != nil {
			tick = func(calls int64, elapsed time.Duration) {
				line := fmt.Sprintf("%s: %s, %d of %d calls made", title, secs(elapsed), calls, planned)
				if sp, ok := s.pool.(statusPool); ok {
					if st := sp.Status(); st != "" {
						line += "; " + st
					}
				}
				progress(line)
			}
		}
		before := est.Counts()
		r := s.scan(ctx, tick)
		if progress != nil {
			progress("")
		}
		requests, throttled := estateTally(before, est.Counts())
		r.report(w, title, requests, throttled)
		runs = append(runs, r)
		if err := ctx.Err(); err != nil {
			return runs, err
		}
	}
	return runs, nil
}

func timeoutString(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return d.String()
}
