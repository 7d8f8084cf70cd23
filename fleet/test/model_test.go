package test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/fleet/test/internal/redisproxy"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// TestFleetModel is the stateful property test of fleet mode: random
// sequences of governed calls (concurrent, with random outcomes and
// contexts, going on in the background), joins and pauses, against a
// redis-server of the test's own, with faults injected between the steps
// (while calls wait): Redis killed, restarted empty, frozen, slowed, fed
// garbage (junk in its keys, or garbled answers), and healed. After every
// step, and once more at the end of each case once every call it sent has
// ended (finish), it checks the invariants against a small reference model
// of what the governor promises:
//
//   - no panic, and no deadlock: every call ends within a bound;
//   - the account's calls in flight never above its cap, and every slot
//     released exactly once (none held or waited for once the calls
//     ended);
//   - per one-second window, the tokens taken (at the times the bucket
//     gave them) within the rate and one burst, a burst more for each
//     fault or heal in the window or the second before it (each may put a
//     fresh bucket in service: Redis's state lost, a switch), a token more
//     for each token given back within the queue's span before (a caller
//     whose deadline its token would pass gives it back, and the queue's
//     end moves back a token, as in the in-process bucket: the next caller
//     takes that place, alongside the caller already holding it), and a
//     token of phase;
//   - only legal breaker transitions reported: closed to open, open to
//     half-open, half-open to closed or open;
//   - no call returns later than its context's deadline and the margin:
//     five Redis operation timeouts and 50 ms of a loaded machine's
//     scheduling. The governor gives the store no context: a call that
//     asks Redis about the breaker, then waits for the answer to the
//     lease request in flight and to the one sent for it, then records a
//     failure and a throttle, may wait for five operations, each bounded
//     by WithTimeout, past its deadline.
//
// CI runs a fixed budget of cases (about a minute on two cores); set
// CLOUDG_FLEET_SOAK to a duration (CLOUDG_FLEET_SOAK=30m) to run cases
// until it has passed. It needs redis-server; rapid's flags
// (-rapid.checks, -rapid.steps, -rapid.seed) work as usual, and a failure
// is shrunk and saved under testdata/rapid, which every later run replays
// first. The replay depends on the machine's timing, so a shrunk case
// becomes a test of its own too (TestRedisNearItsTimeoutKeepsTheRate is
// the one this model found on the code before the switches charged the
// new bucket).
func TestFleetModel(t *testing.T) {
	env := newModelEnv(t)
	setDefault := func(name, v string) {
		set := false
		flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
		if !set {
			flag.Set(name, v)
		}
	}
	setDefault("rapid.checks", "15")
	setDefault("rapid.steps", "24")

	soak, _ := time.ParseDuration(os.Getenv("CLOUDG_FLEET_SOAK"))
	start := time.Now()
	for round := 1; ; round++ {
		rapid.Check(t, func(rt *rapid.T) { runCase(rt, env, (*fleetModel).actions) })
		if t.Failed() || time.Since(start) >= soak {
			t.Logf("%d rounds in %v: %d cases, %d steps, %d calls, %d faults and heals, %d switches to local limits; the latest call returned %v after its deadline",
				round, time.Since(start).Round(time.Second), env.cases.Load(), env.steps.Load(), env.calls.Load(),
				env.faults.Load(), env.fallbacks.Load(), time.Duration(env.latest.Load()).Round(time.Millisecond))
			return
		}
	}
}

// newModelEnv starts the redis-server the cases share, and the proxy in
// front of it.
func newModelEnv(t *testing.T) *modelEnv {
	bin := redisServerBinary(t)
	rs := &ownRedis{t: t, bin: bin, port: freePort(t)}
	rs.start()
	px, err := redisproxy.Start(rs.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	return &modelEnv{rs: rs, px: px}
}

// runCase runs one case: a model, its actions, and the checks at its end.
func runCase(rt *rapid.T, env *modelEnv, actions func(*fleetModel) map[string]func(*rapid.T)) {
	m := newFleetModel(rt, env)
	defer m.close()
	rt.Repeat(actions(m))
	m.finish(rt)
}

// ownRedis is a redis-server the test starts, kills and restarts empty on
// one port.
type ownRedis struct {
	t    *testing.T
	bin  string
	port int
	mu   sync.Mutex
	cmd  *exec.Cmd
}

func (r *ownRedis) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// start starts the server, empty, unless it runs.
func (r *ownRedis) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return
	}
	r.cmd = startServer(r.t, r.port).cmd
}

// kill kills the server, if it runs.
func (r *ownRedis) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}

func (r *ownRedis) up() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd != nil
}

// modelEnv is what the cases share: the server and the proxy in front of
// it.
type modelEnv struct {
	rs *ownRedis
	px *redisproxy.Proxy

	// Totals over the cases, logged at the end.
	cases, steps, calls, faults, fallbacks atomic.Int64
	latest                                 atomic.Int64 // the latest return after a deadline (ns)
}

// The model's settings: a leaf of 10 rps with a burst of 2 (a step's calls
// queue for up to 1.6 s, so that faults come while callers wait), a bulkhead of
// 3, a breaker opening after 3 failures for 1 s (up to 4 s), and a store
// that gives Redis 30 ms per operation.
const (
	modelRate     = 10
	modelBurst    = 2
	modelCap      = 3
	modelTimeout  = 30 * time.Millisecond
	modelMargin   = 5*modelTimeout + 50*time.Millisecond
	modelStepWait = 15 * time.Second // a step's calls end within this, or it is a deadlock
	modelQueue    = 6 * time.Second  // the longest a queue of the model's callers lasts
)

var modelConfig = resilience.Config{AWS: resilience.ProviderConfig{
	MaxConcurrency:            modelCap,
	BreakerThreshold:          3,
	BreakerCooldownSeconds:    1,
	BreakerMaxCooldownSeconds: 4,
	MaxRetries:                new(1),
	BaseDelaySeconds:          0.005,
	MaxBackoffSeconds:         0.02,
	DeadlineSeconds:           3,
	Services:                  map[string]resilience.ServiceConfig{"ec2": {MaxRPS: modelRate, Burst: modelBurst}},
}}

// fleetModel is one case: a process (a store and a governor) and what the
// reference model tracks.
type fleetModel struct {
	env    *modelEnv
	prefix string
	rdb    redis.UniversalClient
	store  *fleet.Store
	rec    *recordingStore
	gov    *resilience.Governor
	direct *redis.Client // to the server, past the proxy: for the garbage

	calls      sync.WaitGroup // the calls sent and not joined
	pending    int            // how many
	loopers    sync.WaitGroup // callers calling again and again until stop
	stop       chan struct{}
	stopOnce   sync.Once
	looping    bool // loopers run
	inFlight   atomic.Int64
	violations chan violation // what the calls saw break, checked after the step
	stepWait   time.Duration  // a step's calls end within this, or it is a deadlock
	events     []time.Time    // faults and heals
	steps      int
	frozen     bool
}

func newFleetModel(t *rapid.T, env *modelEnv) *fleetModel {
	env.px.Thaw()
	env.px.SetDelay(0)
	env.px.Garble(0) // none left from the last case
	env.rs.start()
	m := &fleetModel{env: env, violations: make(chan violation, 1024), stepWait: modelStepWait}
	m.prefix = "model-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	m.rdb = redis.NewClient(&redis.Options{Addr: env.px.Addr(), MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	m.direct = redis.NewClient(&redis.Options{Addr: env.rs.addr(), MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	// A lease of one token makes every token a round trip, and callers
	// queue for one another's requests.
	lease := rapid.SampledFrom([]int{1, 4, 64}).Draw(t, "max_lease")
	m.store = fleet.New(m.rdb, fleet.WithPrefix(m.prefix), fleet.WithLogger(quiet),
		fleet.WithTimeout(modelTimeout), fleet.WithHeartbeat(50*time.Millisecond), fleet.WithMaxLease(lease))
	m.rec = &recordingStore{Store: m.store, key: vpcsKey}
	obs := observe.Func(func(e observe.Event) {
		if e.Kind != observe.BreakerChange {
			return
		}
		switch [2]state.BreakerState{e.From, e.To} {
		case [2]state.BreakerState{state.Closed, state.Open}, [2]state.BreakerState{state.Open, state.HalfOpen},
			[2]state.BreakerState{state.HalfOpen, state.Closed}, [2]state.BreakerState{state.HalfOpen, state.Open}:
		default:
			m.violate("an illegal breaker transition", "the breaker went from %v to %v", e.From, e.To)
		}
	})
	var err error
	if m.gov, err = resilience.NewGovernor(modelConfig, resilience.WithStateStore(m.rec), resilience.WithObserver(obs)); err != nil {
		t.Fatal(err)
	}
	// Callers that call again as soon as a call ends, for the whole case:
	// the bucket stays busy, and the faults come while they queue.
	m.stop = make(chan struct{})
	loopers := rapid.IntRange(0, 6).Draw(t, "loopers")
	m.looping = loopers > 0
	for range loopers {
		m.loopers.Go(func() {
			for {
				select {
				case <-m.stop:
					return
				default:
				}
				if err := m.call(0, "ok", 0); err != nil {
					time.Sleep(20 * time.Millisecond) // an open breaker refuses at once: no spinning
				}
			}
		})
	}
	return m
}

// actions are the model's actions, weighted: calls, joins and pauses
// about half the steps, a fault or a heal the others (a slow Redis, which
// the callers still wait for, twice as often as each other fault).
func (m *fleetModel) actions() map[string]func(*rapid.T) {
	a := rapid.StateMachineActions(m)
	for name, n := range map[string]int{"Calls": 4, "Sleep": 3, "Join": 2, "Slow": 2} {
		for i := 2; i <= n; i++ {
			a[name+strconv.Itoa(i)] = a[name]
		}
	}
	return a
}

// finish ends a case whose steps all ran: it stops the loopers, waits for
// every call to end, and checks the invariants once more, for what the
// calls did after the last step's check: every call ended within stepWait,
// no violation reported, every slot released, and the tokens within the
// rate and the bursts allowed.
func (m *fleetModel) finish(t *rapid.T) {
	m.stopLoopers()
	joined := m.join()
	looped := make(chan struct{})
	go func() {
		m.loopers.Wait()
		close(looped)
	}()
	select {
	case <-looped:
	case <-time.After(m.stepWait):
		fail(t, "a deadlock", "a looper's call did not end within %v of the case's end", m.stepWait)
	}
	if !joined {
		fail(t, "a deadlock", "%d calls did not end within %v of the case's last step", m.pending, m.stepWait)
	}
	select {
	case v := <-m.violations:
		fail(t, v.what, "%s (after the case's last step)", v.how)
	default:
	}
	if n := m.inFlight.Load(); n != 0 {
		fail(t, "calls in flight with none sent", "%d calls in flight once every call ended", n)
	}
	if s := m.gov.Inspect(vpcs); s.InFlight != 0 || s.Waiting != 0 {
		fail(t, "a slot not released", "the bulkhead holds %d slots and %d callers wait once every call ended", s.InFlight, s.Waiting)
	}
	if err := m.checkTokens(); err != nil {
		fail(t, "tokens above the rate and the bursts allowed", "%v (after the case's last step)", err)
	}
}

// stopLoopers tells the loopers to stop; it may be called again.
func (m *fleetModel) stopLoopers() { m.stopOnce.Do(func() { close(m.stop) }) }

// close releases what the case holds, however it ended: the loopers and
// the calls are waited for (at most stepWait each), the store closed.
func (m *fleetModel) close() {
	m.stopLoopers()
	m.join()
	m.loopers.Wait()
	m.env.cases.Add(1)
	m.env.steps.Add(int64(m.steps))
	m.env.faults.Add(int64(len(m.events)))
	m.env.fallbacks.Add(m.store.Stats().Fallbacks)
	m.store.Close()
	m.rdb.Close()
	m.direct.Close()
}

// violate records a broken invariant: what broke (the same words for the
// same invariant, so that rapid knows the failure again when it shrinks
// the case) and how.
func (m *fleetModel) violate(what, format string, args ...any) {
	select {
	case m.violations <- violation{what, fmt.Sprintf(format, args...)}:
	default:
	}
}

type violation struct{ what, how string }

// fail ends the case with what broke, having logged how.
func fail(t *rapid.T, what, format string, args ...any) {
	t.Helper()
	t.Logf(format, args...)
	fmt.Fprintf(os.Stderr, "fleet model: %s: %s\n", what, fmt.Sprintf(format, args...)) // rapid shows only the reproduction's output
	t.Fatal(what)
}

// event records a fault or a heal.
func (m *fleetModel) event() { m.events = append(m.events, time.Now()) }

// Calls sends 1 to 16 calls at once, each with an outcome (success,
// throttled, transient error, fatal error), a context (none, or a
// deadline of 20 to 400 ms) and a time in the provider's hands. They go on
// while the next steps run (faults are injected while callers queue);
// Join waits for them.
func (m *fleetModel) Calls(t *rapid.T) {
	type call struct {
		outcome string
		limit   time.Duration
		work    time.Duration
	}
	calls := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) call {
		return call{
			outcome: rapid.SampledFrom([]string{"ok", "ok", "ok", "throttled", "transient", "fatal"}).Draw(t, "outcome"),
			limit:   time.Duration(rapid.SampledFrom([]int{0, 0, 20, 60, 150, 400}).Draw(t, "limit_ms")) * time.Millisecond,
			work:    time.Duration(rapid.IntRange(0, 5).Draw(t, "work_ms")) * time.Millisecond,
		}
	}), 1, 16).Draw(t, "calls")
	for _, c := range calls {
		m.calls.Go(func() { m.call(c.limit, c.outcome, c.work) })
		m.pending++
	}
}

// call sends one call with a context of limit (none if 0), which answers
// with outcome after work, and checks what it sees.
func (m *fleetModel) call(limit time.Duration, outcome string, work time.Duration) (err error) {
	defer func() {
		if r := recover(); r != nil {
			m.violate("a call panicked", "a call panicked: %v", r)
		}
	}()
	ctx := context.Background()
	var dl time.Time
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
		dl, _ = ctx.Deadline()
	}
	fn := func(context.Context) error {
		if n := m.inFlight.Add(1); n > modelCap {
			m.violate("calls in flight over the cap", "%d calls in flight, over the cap of %d", n, modelCap)
		}
		time.Sleep(work)
		m.inFlight.Add(-1)
		switch outcome {
		case "throttled":
			return &apiErr{code: "Throttling", status: 400}
		case "transient":
			return &apiErr{code: "InternalError", status: 500}
		case "fatal":
			return &apiErr{code: "AccessDenied", status: 403}
		}
		return nil
	}
	err = resilience.Do(ctx, vpcs, fn, resilience.WithGovernor(m.gov))
	m.env.calls.Add(1)
	if limit > 0 {
		late := time.Since(dl)
		for {
			l := m.env.latest.Load()
			if int64(late) <= l || m.env.latest.CompareAndSwap(l, int64(late)) {
				break
			}
		}
		if late > modelMargin {
			m.violate("a call returned past its deadline and the margin", "a call with a %v context returned %v after its deadline", limit, late)
		}
	}
	return err
}

// Join waits for the calls sent so far: every one ends within
// stepWait, or it is a deadlock.
func (m *fleetModel) Join(t *rapid.T) {
	if m.pending == 0 {
		t.Skip("no call to wait for")
	}
	if !m.join() {
		fail(t, "a deadlock", "%d calls did not end within %v", m.pending, m.stepWait)
	}
}

// join waits for the calls sent so far, and reports whether they ended
// within stepWait.
func (m *fleetModel) join() bool {
	done := make(chan struct{})
	go func() {
		m.calls.Wait()
		close(done)
	}()
	select {
	case <-done:
		m.pending = 0
		return true
	case <-time.After(m.stepWait):
		return false
	}
}

// Sleep lets 0 to 600 ms pass: tokens refill, cooldowns end, the
// heartbeat probes.
func (m *fleetModel) Sleep(t *rapid.T) {
	time.Sleep(time.Duration(rapid.IntRange(0, 600).Draw(t, "sleep_ms")) * time.Millisecond)
}

// Kill kills Redis; it stays down until Heal or Restart.
func (m *fleetModel) Kill(t *rapid.T) {
	if !m.env.rs.up() {
		t.Skip("down already")
	}
	m.env.rs.kill()
	m.event()
}

// Restart kills Redis and starts it again, empty.
func (m *fleetModel) Restart(t *rapid.T) {
	m.env.rs.kill()
	m.env.rs.start()
	m.event()
}

// Freeze holds every byte to and from Redis until Heal.
func (m *fleetModel) Freeze(t *rapid.T) {
	if m.frozen {
		t.Skip("frozen already")
	}
	m.env.px.Freeze()
	m.frozen = true
	m.event()
}

// Slow delays each chunk of data each way by 5 to 20 ms (20 ms each way
// is past the operation timeout) until Heal.
func (m *fleetModel) Slow(t *rapid.T) {
	m.env.px.SetDelay(time.Duration(rapid.SampledFrom([]int{5, 10, 20}).Draw(t, "delay_ms")) * time.Millisecond)
	m.event()
}

// Garble replaces Redis's next 1 to 3 answers with garbage.
func (m *fleetModel) Garble(t *rapid.T) {
	m.env.px.Garble(rapid.IntRange(1, 3).Draw(t, "answers"))
	m.event()
}

// Junk writes what the local settings could not have written into one of
// the case's keys: a field of the bucket or the breaker, the budget, the
// process set, or a key of another type.
func (m *fleetModel) Junk(t *rapid.T) {
	if !m.env.rs.up() {
		t.Skip("Redis is down")
	}
	bucketKey := m.prefix + ":{" + vpcsKey + "}:bucket"
	breakerKey := m.prefix + ":{" + vpcsKey + "}:breaker"
	value := rapid.SampledFrom([]string{"junk", "nan", "-inf", "1e300", "-1", "0", "1e-300", "9999999999999999"}).Draw(t, "value")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var err error
	switch target := rapid.SampledFrom([]string{"bucket", "breaker", "budget", "procs", "type"}).Draw(t, "target"); target {
	case "bucket":
		field := rapid.SampledFrom([]string{"t0", "paused", "rate", "ldec", "lthr", "linc"}).Draw(t, "field")
		err = m.direct.HSet(ctx, bucketKey, field, value).Err()
	case "breaker":
		field := rapid.SampledFrom([]string{"state", "failures", "cooldown", "until"}).Draw(t, "field")
		err = m.direct.HSet(ctx, breakerKey, field, value).Err()
	case "budget":
		err = m.direct.Set(ctx, m.prefix+":{budget:aws}", value, time.Minute).Err()
	case "procs":
		err = m.direct.Set(ctx, m.prefix+":procs", value, time.Minute).Err()
	case "type":
		key := rapid.SampledFrom([]string{bucketKey, breakerKey}).Draw(t, "key")
		err = m.direct.Set(ctx, key, value, time.Minute).Err()
	}
	if err != nil {
		t.Skipf("no junk written: %v", err) // the key holds junk of another type already, say
	}
	m.event()
}

// Heal thaws Redis, removes the delay and starts it if it was killed
// (empty).
func (m *fleetModel) Heal(t *rapid.T) {
	m.env.px.Thaw()
	m.frozen = false
	m.env.px.SetDelay(0)
	m.env.rs.start()
	m.event()
}

// Check checks the invariants after every step.
func (m *fleetModel) Check(t *rapid.T) {
	m.steps++
	select {
	case v := <-m.violations:
		fail(t, v.what, "%s", v.how)
	default:
	}
	if m.pending == 0 && !m.looping {
		if n := m.inFlight.Load(); n != 0 {
			fail(t, "calls in flight with none sent", "%d calls in flight with none sent", n)
		}
		if s := m.gov.Inspect(vpcs); s.InFlight != 0 || s.Waiting != 0 {
			fail(t, "a slot not released", "the bulkhead holds %d slots and %d callers wait with no call sent", s.InFlight, s.Waiting)
		}
	}
	if err := m.checkTokens(); err != nil {
		fail(t, "tokens above the rate and the bursts allowed", "%v", err)
	}
}

// checkTokens checks the tokens taken per one-second window against the
// rate and the bursts the window may hold.
func (m *fleetModel) checkTokens() error {
	ts, cancels := m.rec.times(), m.rec.cancelTimes()
	j := 0
	for i, s := range ts {
		j = max(j, i)
		end := s.Add(time.Second)
		for j < len(ts) && ts[j].Before(end) {
			j++
		}
		bursts := 1
		for _, e := range m.events {
			if !e.Before(s.Add(-time.Second)) && e.Before(end) {
				bursts++
			}
		}
		given := 0
		for _, c := range cancels {
			if !c.Before(s.Add(-modelQueue)) && c.Before(end) {
				given++
			}
		}
		if n, allowed := j-i, modelRate+bursts*modelBurst+given+1; n > allowed {
			return fmt.Errorf("%d tokens in the second from %v, more than the rate, %d bursts, %d tokens given back and a token of phase allow (%d)",
				n, s.Sub(ts[0]).Round(time.Millisecond), bursts, given, allowed)
		}
	}
	return nil
}

// lateEnv names what TestFleetModelLateCase breaks after its last step.
const lateEnv = "CLOUDG_FLEET_MODEL_LATE"

// TestFleetModelChecksAfterItsLastStep: a case of the model checks its
// invariants once more at its end, once every call it sent has ended: a
// violation a call reports after the case's last step, tokens taken after
// it above the rate, and calls that do not end fail the case as they
// would after any other step. Each runs TestFleetModelLateCase, whose
// steps break one of them a while after they return, in a child process,
// and wants it to fail, saying what broke.
func TestFleetModelChecksAfterItsLastStep(t *testing.T) {
	redisServerBinary(t)
	for kind, what := range map[string]string{
		"violation": "a late violation",
		"tokens":    "tokens above the rate and the bursts allowed",
		"deadlock":  "a deadlock",
	} {
		t.Run(kind, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestFleetModelLateCase$", "-test.count=1", "-test.v",
				"-rapid.checks=1", "-rapid.steps=4", "-rapid.nofailfile", "-rapid.shrinktime=1ms")
			cmd.Env = append(os.Environ(), lateEnv+"="+kind)
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "--- FAIL: TestFleetModelLateCase") {
				t.Fatalf("a case that broke %q after its last step passed (%v):\n%s", what, err, out)
			}
			if !strings.Contains(string(out), what) {
				t.Fatalf("a case that broke %q after its last step failed for something else:\n%s", what, out)
			}
		})
	}
}

// TestFleetModelLateCase runs only in TestFleetModelChecksAfterItsLastStep's
// child process: cases that start a call which, 200 ms later, after the
// case's last step (steps that do nothing), reports a violation, takes
// tokens above the rate, or outlasts the wait for the calls.
func TestFleetModelLateCase(t *testing.T) {
	kind := os.Getenv(lateEnv)
	if kind == "" {
		t.Skip("runs in TestFleetModelChecksAfterItsLastStep's child process")
	}
	env := newModelEnv(t)
	rapid.Check(t, func(rt *rapid.T) {
		runCase(rt, env, func(m *fleetModel) map[string]func(*rapid.T) {
			m.stepWait = 800 * time.Millisecond
			m.pending++
			m.calls.Go(func() {
				time.Sleep(200 * time.Millisecond)
				switch kind {
				case "violation":
					m.violate("a late violation", "a violation reported late")
				case "tokens":
					m.rec.mu.Lock()
					for range 2 * (modelRate + modelBurst) {
						m.rec.at = append(m.rec.at, time.Now())
					}
					m.rec.mu.Unlock()
				case "deadlock":
					time.Sleep(2 * time.Second)
				}
			})
			return map[string]func(*rapid.T){"": m.Check, "Nothing": func(*rapid.T) {}}
		})
	})
}
