package test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
)

// The fleet test runs real OS processes: this test binary, started again
// with CLOUDG_FLEET_WORKER set, runs one collector process (TestMain hands
// it to runWorker). They call one simulated provider on 127.0.0.1 whose
// true limit is 20 requests per second per action (burst 20), with and
// without fleet mode.

const (
	trueRPS   = 20
	trueBurst = 20
)

func TestMain(m *testing.M) {
	if os.Getenv("CLOUDG_FLEET_WORKER") != "" {
		os.Exit(runWorker())
	}
	os.Exit(m.Run())
}

// provider is the simulated service: a token bucket per action, 429 when
// it is empty. It counts what it accepted and rejected, with times.
type provider struct {
	mu       sync.Mutex
	tokens   map[string]float64
	last     map[string]time.Time
	accepted []time.Time
	rejects  []time.Time
	rejected int
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	action := strings.TrimPrefix(r.URL.Path, "/")
	now := time.Now()
	p.mu.Lock()
	tok, seen := p.tokens[action]
	if !seen {
		tok = trueBurst
	} else {
		tok = math.Min(trueBurst, tok+now.Sub(p.last[action]).Seconds()*trueRPS)
	}
	p.last[action] = now
	ok := tok >= 1
	if ok {
		tok--
		p.accepted = append(p.accepted, now)
	} else {
		p.rejected++
		p.rejects = append(p.rejects, now)
	}
	p.tokens[action] = tok
	p.mu.Unlock()
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"__type":"ThrottlingException","message":"Rate exceeded"}`)
		return
	}
	fmt.Fprint(w, `{"Vpcs":[]}`)
}

func (p *provider) acceptedBetween(from, to time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, t := range p.accepted {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

// workerResult is what a worker process prints.
type workerResult struct {
	Calls      int64 `json:"calls"`      // calls that succeeded
	Lost       int64 `json:"lost"`       // calls that failed after the governor gave up
	Unfinished int64 `json:"unfinished"` // calls still waiting when the run ended
	Throttled  int64 `json:"throttled"`  // 429 answers seen
	Fallbacks  int64 `json:"fallbacks"`
}

type httpStatusError struct{ status int }

func (e *httpStatusError) Error() string       { return "HTTP " + strconv.Itoa(e.status) }
func (e *httpStatusError) HTTPStatusCode() int { return e.status }
func (e *httpStatusError) ErrorCode() string {
	if e.status == http.StatusTooManyRequests {
		return "ThrottlingException"
	}
	return ""
}

// runWorker is one collector process: 8 goroutines calling DescribeVpcs
// through the governor from the start time for the duration.
func runWorker() int {
	env := func(k string) string { return os.Getenv("CLOUDG_FLEET_" + k) }
	start, _ := strconv.ParseInt(env("START"), 10, 64)
	dur, _ := time.ParseDuration(env("DURATION"))
	providerURL := env("PROVIDER")
	cfg := resilience.Config{AWS: resilience.ProviderConfig{
		Controller: env("CONTROLLER"),
		Services:   map[string]resilience.ServiceConfig{"ec2": {MaxRPS: trueRPS, Burst: trueBurst}},
	}}
	var opts []resilience.GovernorOption
	var store *fleet.Store
	if u := env("REDIS_URL"); u != "" {
		// A loaded CI machine (8 race-instrumented processes on 2 cores) can
		// take longer than the default 250 ms: the comparison wants no fallback.
		var err error
		if store, err = fleet.Open(u, fleet.WithPrefix(env("PREFIX")), fleet.WithTimeout(2*time.Second)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer store.Close()
		opts = append(opts, resilience.WithStateStore(store))
	}
	gov, err := resilience.NewGovernor(cfg, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	scope := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
	var res workerResult
	var throttled atomic.Int64
	call := func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, providerURL+"/DescribeVpcs", nil)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			if resp.StatusCode == http.StatusTooManyRequests {
				throttled.Add(1)
			}
			return &httpStatusError{resp.StatusCode}
		}
		return nil
	}
	time.Sleep(time.Until(time.Unix(0, start)))
	end := time.Now().Add(dur)
	ctx, cancel := context.WithDeadline(context.Background(), end.Add(3*time.Second))
	defer cancel()
	var calls, lost, unfinished atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(end) {
				err := resilience.Do(ctx, scope, call, resilience.WithGovernor(gov))
				var coe *resilience.CircuitOpenError
				var dee *resilience.DeadlineExceededError
				switch {
				case err == nil:
					calls.Add(1)
				case ctx.Err() != nil || errors.As(err, &dee):
					// The run ends before this call's turn: not lost.
					unfinished.Add(1)
					return
				case errors.As(err, &coe):
					// Skipped: a collector moves on, and comes back when
					// the breaker lets a probe through.
					lost.Add(1)
					time.Sleep(min(coe.RetryAfter(), time.Until(end)))
				default:
					lost.Add(1)
				}
			}
		})
	}
	wg.Wait()
	res = workerResult{Calls: calls.Load(), Lost: lost.Load(), Unfinished: unfinished.Load(), Throttled: throttled.Load()}
	if store != nil {
		res.Fallbacks = store.Stats().Fallbacks
	}
	b, _ := json.Marshal(res)
	fmt.Println("FLEETRESULT " + string(b))
	if os.Getenv("CLOUDG_FLEET_DEBUG") != "" {
		sj, _ := json.Marshal(gov.Summary(nil).Totals)
		fmt.Fprintln(os.Stderr, "worker", env("INDEX"), string(sj), gov.Summary(nil).Messages)
	}
	return 0
}

type fleetRun struct {
	name       string
	controller string
	processes  int
	fleet      bool
	requests   int // sent to the provider
	accepted   int // within the window
	rejected   int
	lost       int64
	unfinished int64
	goodput    float64 // accepted in the window / what the true limit allows
}

func (r fleetRun) rejectedShare() float64 {
	return float64(r.rejected) / math.Max(1, float64(r.requests))
}

func (r fleetRun) String() string {
	return fmt.Sprintf("%-7s  %-39s requests %5d  rejected %5d (%5.1f%%)  goodput %5.1f%%  lost %d  unfinished %d",
		r.controller, r.name, r.requests, r.rejected, 100*r.rejectedShare(), 100*r.goodput, r.lost, r.unfinished)
}

// runFleet runs processes workers with the controller; with a Redis URL
// (fleet.Open's forms) in fleet mode.
func runFleet(t testing.TB, controller, name string, processes int, redisURL string, dur time.Duration) fleetRun {
	t.Helper()
	p := &provider{tokens: map[string]float64{}, last: map[string]time.Time{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p}
	go srv.Serve(ln)
	defer srv.Close()

	start := time.Now().Add(2 * time.Second) // time for the processes to start
	prefix := uniquePrefix(t)
	var cmds []*exec.Cmd
	var outs []*bufio.Scanner
	for i := range processes {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(),
			"CLOUDG_FLEET_WORKER=1",
			"CLOUDG_FLEET_START="+strconv.FormatInt(start.UnixNano(), 10),
			"CLOUDG_FLEET_DURATION="+dur.String(),
			"CLOUDG_FLEET_PROVIDER=http://"+ln.Addr().String(),
			"CLOUDG_FLEET_REDIS_URL="+redisURL,
			"CLOUDG_FLEET_CONTROLLER="+controller,
			"CLOUDG_FLEET_PREFIX="+prefix,
			"CLOUDG_FLEET_INDEX="+strconv.Itoa(i),
		)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		outs = append(outs, bufio.NewScanner(out))
	}
	if controller == "" {
		controller = "aimd"
	}
	run := fleetRun{name: name, controller: controller, processes: processes, fleet: redisURL != ""}
	for i, cmd := range cmds {
		var res workerResult
		found := false
		for outs[i].Scan() {
			if line, ok := strings.CutPrefix(outs[i].Text(), "FLEETRESULT "); ok {
				if err := json.Unmarshal([]byte(line), &res); err != nil {
					t.Fatal(err)
				}
				found = true
			}
		}
		if err := cmd.Wait(); err != nil || !found {
			t.Fatalf("worker %d: %v (result found: %v)", i, err, found)
		}
		run.lost += res.Lost
		run.unfinished += res.Unfinished
		if res.Fallbacks != 0 {
			t.Fatalf("worker %d fell back to local limits %d times", i, res.Fallbacks)
		}
	}
	p.mu.Lock()
	run.requests = len(p.accepted) + p.rejected
	run.rejected = p.rejected
	p.mu.Unlock()
	run.accepted = p.acceptedBetween(start, start.Add(dur))
	if os.Getenv("CLOUDG_FLEET_DEBUG") != "" {
		for s := -2; s < 14; s++ {
			a, r := 0, 0
			from, to := start.Add(time.Duration(s)*time.Second), start.Add(time.Duration(s+1)*time.Second)
			for _, x := range p.accepted {
				if !x.Before(from) && x.Before(to) {
					a++
				}
			}
			for _, x := range p.rejects {
				if !x.Before(from) && x.Before(to) {
					r++
				}
			}
			t.Logf("%s second %d: accepted %d rejected %d", name, s, a, r)
		}
	}
	run.goodput = float64(run.accepted) / (trueBurst + trueRPS*dur.Seconds())
	return run
}

// fleetBackends are the Redis a fleet runs on: redis-server (miniredis
// without one) and the cluster when there is one.
func fleetBackends(t testing.TB) []backend {
	var fleets []backend
	if be, ok := redisServer(t); ok {
		fleets = append(fleets, be)
	} else {
		mr := miniredis.RunT(t)
		fleets = append(fleets, backend{name: "miniredis", addrs: []string{mr.Addr()}})
	}
	if be, ok := redisCluster(); ok {
		fleets = append(fleets, be)
	}
	return fleets
}

const fleetRunFor = 10 * time.Second

// TestFleetOfEightProcesses runs eight real processes against the
// simulated provider, without fleet mode and in fleet mode (on one Redis,
// and on a Redis Cluster when there is one), with each controller (AIMD
// and the measured-goodput controller), and checks what fleet mode
// promises with bounds that hold on a loaded machine. Eight processes of
// race-instrumented code on two cores measure wall-clock seconds: a
// process descheduled for a while sends the calls it owed together, and
// the provider rejects some. So the bounds are not comparisons with one
// process's run (itself a measurement with the same spread: the 1.69%
// against 0.75% and a request of slack that failed once) but limits set
// from the counts of 12 runs of the whole table on this 2-core machine, 8
// of them beside other work (load 6 to 8) and 4 with two busy loops added
// (load 12); BenchmarkFleetOfEightProcesses prints the table:
//
//   - fleet mode loses no call and never falls back (none did);
//   - fleet mode's rejected share at most 15%, and at most half the share
//     without fleet mode: 0.4-1.1% in 46 of the 48 fleet-mode rows, 3.0%
//     and 10.1% in two under the busy loops (the cluster's);
//   - without fleet mode at least 20% rejected (measured 25.9-36.9%): the
//     provider shows what fleet mode saves;
//   - fleet mode's goodput at least 50% with AIMD (measured 61.8-94.5%;
//     AIMD halves the rate on its first throttle, then gains 5% of the
//     ceiling per 5 s) and at least 85% with the goodput controller
//     (measured 92.3-97.7%).
func TestFleetOfEightProcesses(t *testing.T) {
	fleets := fleetBackends(t)
	var table []fleetRun
	for _, controller := range []string{"aimd", "goodput"} {
		apart := runFleet(t, controller, "8 processes, no fleet", 8, "", fleetRunFor)
		table = append(table, apart)
		if apart.rejectedShare() < 0.2 {
			t.Errorf("%s %s: rejected %.1f%% of its requests, want at least 20%%: the provider does not show what fleet mode saves", controller, apart.name, 100*apart.rejectedShare())
		}
		for _, be := range fleets {
			shared := runFleet(t, controller, "8 processes, fleet mode ("+be.name+")", 8, be.url(), fleetRunFor)
			table = append(table, shared)
			if shared.lost != 0 {
				t.Errorf("%s %s: lost %d calls", controller, shared.name, shared.lost)
			}
			if r := shared.rejectedShare(); r > 0.15 || apart.rejectedShare() < 2*r {
				t.Errorf("%s %s: rejected %.2f%% of its requests, want at most 15%% and half the %.1f%% without fleet mode",
					controller, shared.name, 100*r, 100*apart.rejectedShare())
			}
			if low := map[string]float64{"aimd": 0.5, "goodput": 0.85}[controller]; shared.goodput < low {
				t.Errorf("%s %s: goodput %.1f%%, want at least %.0f%%", controller, shared.name, 100*shared.goodput, 100*low)
			}
		}
	}
	for _, r := range table {
		t.Log(r)
	}
}

// BenchmarkFleetOfEightProcesses prints the fleet test's whole table: one
// process alone, eight processes with per-process limits, and eight
// processes in fleet mode (on one Redis, and on a Redis Cluster when there
// is one), against the same true limit, with each controller. It runs
// once (each row is ten seconds of eight real processes):
//
//	cd fleet/test && CLOUDG_REDIS_URL=redis://127.0.0.1:6390/0 \
//	CLOUDG_REDIS_CLUSTER_ADDRS=127.0.0.1:7301,127.0.0.1:7302,127.0.0.1:7303 \
//	go test -run '^$' -bench FleetOfEightProcesses -benchtime 1x .
func BenchmarkFleetOfEightProcesses(b *testing.B) {
	fleets := fleetBackends(b)
	for b.Loop() {
		var table []fleetRun
		for _, controller := range []string{"aimd", "goodput"} {
			table = append(table, runFleet(b, controller, "1 process", 1, "", fleetRunFor),
				runFleet(b, controller, "8 processes, no fleet", 8, "", fleetRunFor))
			for _, be := range fleets {
				table = append(table, runFleet(b, controller, "8 processes, fleet mode ("+be.name+")", 8, be.url(), fleetRunFor))
			}
		}
		for _, r := range table {
			b.Log(r)
		}
	}
}
