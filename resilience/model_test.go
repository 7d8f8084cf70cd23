//go:build go1.25

package resilience_test

// The stateful model test of the governor: random sequences of Do and Call,
// a Guard's verbs (Begin, Enter, TryEnter, Pace, After, Retry, Resend,
// Release, End, Pause, PauseAccount, and the integrations' resend after an
// authentication challenge, attemptctx.ResendChallenged), Configure,
// Reset, SetDefault,
// cancelled contexts, panicking functions and time jumps, over the built-in
// providers and a generic one, each run in a testing/synctest bubble so
// that hours of virtual time pass in milliseconds. After every step the
// invariants machine.check names hold against a small reference model.
// Only the package's exported names are used, and package attemptctx's
// verbs of the integrations.
//
// CI runs modelChecks sequences of about modelSteps steps each. A long
// soak (a seed to replay is printed on failure):
//
//	go test -race -count=1 -timeout 0 -run '^TestModel$' ./resilience/ -rapid.checks=20000 -rapid.steps=150
//
// CLOUDG_MODEL_WALK=all (or a comma-separated list of their names) also
// walks the paths of the defects knownOpen lists, which the model steers
// around until their fixes merge. A failure prints the shrunk sequence of
// steps; rapid keeps it under testdata/rapid and replays it with
// -rapid.failfile. The TestRegress tests are the sequences found so far.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/cloudg/cloudg/internal/attemptctx"
	"github.com/cloudg/cloudg/internal/modeltest"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// The budget of a run unless -rapid.checks and -rapid.steps say
// otherwise: 200 sequences of about 100 steps (rapid's default of 30 is
// short for a breaker to open, cool down and close again). About 20s with
// -race on two cores.
const (
	modelChecks = 200
	modelSteps  = 100
)

func TestModel(t *testing.T) {
	modeltest.Budget(t, modelChecks, modelSteps)
	prev := resilience.Default() // outside the bubbles: restored at the end
	t.Cleanup(func() { resilience.SetDefault(prev) })
	reached.Reset()
	defer reached.Log(t)
	rapid.Check(t, func(rt *rapid.T) {
		rapid.SyncTest(rt, func(rt *rapid.T) {
			m := newMachine(rt)
			rt.Cleanup(m.abandon)
			rt.Repeat(m.actions())
			m.drain(rt)
		})
	})
}

// reached tallies what the sequences of a run reached; go test -v logs it.
var reached modeltest.Tally

func reach(what string) { reached.Add(what) }

// ---- the answers a function gives ----

// answer is what one attempt of a function does.
type answer uint8

const (
	aOK           answer = iota
	aThrottle            // the provider throttled it
	aThrottleHint        // throttled, with Retry-After: 2
	aTransient           // HTTP 500
	aFatal               // the provider's fatal answer: AccessDenied
	aLocal               // a local error, no provider answer
	aPanic               // the function panics
	aCtx                 // the function saw its context end while it waited
)

var answerNames = [...]string{"ok", "throttle", "throttle+hint", "transient", "fatal", "local", "panic", "ctx"}

func (a answer) String() string { return answerNames[a] }

// modelErr is an SDK-shaped error, read through its methods.
type modelErr struct {
	code   string
	status int
	hint   string
}

func (e *modelErr) Error() string       { return e.code }
func (e *modelErr) ErrorCode() string   { return e.code }
func (e *modelErr) HTTPStatusCode() int { return e.status }
func (e *modelErr) Header() http.Header {
	if e.hint == "" {
		return nil
	}
	return http.Header{"Retry-After": {e.hint}}
}

// err returns a new error for a: each attempt's error is its own value, so
// that errors.Is finds the one a call returned.
func (a answer) err() error {
	switch a {
	case aThrottle:
		return &modelErr{code: "Throttling", status: 400}
	case aThrottleHint:
		return &modelErr{code: "Throttling", status: 429, hint: "2"}
	case aTransient:
		return &modelErr{code: "InternalError", status: 500}
	case aFatal:
		return &modelErr{code: "AccessDenied", status: 403}
	case aLocal:
		return errors.New("local failure")
	}
	return nil
}

// panicValue is what a panicking function of call id panics with.
type panicValue struct{ id int }

// ---- scopes and the settings the model expects ----

// scopeDef is one scope the model calls, with what decides its leaf.
type scopeDef struct {
	sc     resilience.Scope
	svcKey string // the Services key that sets its leaf; "" for the provider's leaf
	perOp  bool   // its leaf (and breaker) keeps the operation
}

var modelScopes = []scopeDef{
	{resilience.Scope{Provider: "aws", Account: "111111111111", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}, "ec2", true},
	{resilience.Scope{Provider: "aws", Account: "111111111111", Region: "us-east-1", Service: "ec2", Operation: "DescribeSubnets"}, "ec2", true},
	{resilience.Scope{Provider: "aws", Account: "111111111111", Service: "iam", Operation: "ListUsers"}, "iam", false},
	{resilience.Scope{Provider: "aws", Account: "222222222222", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}, "ec2", true},
	{resilience.Scope{Provider: "azure", Account: "sub-1", Service: "network"}, "network", false},
	{resilience.Scope{Provider: "azure", Account: "sub-1", Service: "compute"}, "", false},
	{resilience.Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}, "cloudasset.ListAssets", true},
	{resilience.Scope{Provider: "github", Account: "org-1", Service: "repos", Operation: "List"}, "", false},
	{resilience.Scope{Provider: "github", Account: "org-2", Service: "repos", Operation: "List"}, "", false},
}

// firstGeneric is the index of the first scope of a generic provider.
const firstGeneric = 7

// The providers' built-in settings the model needs (the README's
// configuration reference).
type spec struct{ rate, burst float64 }

func (s spec) capacity() float64 {
	c := s.burst
	if c <= 0 {
		c = 2 * s.rate
	}
	return math.Max(1, c)
}

var (
	builtinServices = map[string]map[string]spec{
		"aws":   {"ec2": {20, 100}, "iam": {10, 40}},
		"azure": {"network": {30, 200}},
		"gcp":   {"cloudasset.ListAssets": {1.5, 10}},
	}
	builtinLeaf = map[string]spec{"aws": {20, 40}, "azure": {15, 100}, "gcp": {10, 20}}
	builtinCap  = map[string]int{"aws": 128, "azure": 16, "gcp": 16}
	genericLeaf = spec{20, 40}
	genericCap  = 64
)

func providerConfig(cfg resilience.Config, name string) resilience.ProviderConfig {
	switch name {
	case "aws":
		return cfg.AWS
	case "azure":
		return cfg.Azure
	case "gcp":
		return cfg.GCP
	}
	return resilience.ProviderConfig{}
}

func enabledIn(cfg resilience.Config, provider string) bool {
	pc := providerConfig(cfg, provider)
	return (cfg.Enabled == nil || *cfg.Enabled) && (pc.Enabled == nil || *pc.Enabled)
}

func capIn(cfg resilience.Config, provider string) int {
	if n := providerConfig(cfg, provider).MaxConcurrency; n > 0 {
		return n
	}
	if n, ok := builtinCap[provider]; ok {
		return n
	}
	return genericCap
}

func leafSpecIn(cfg resilience.Config, sd scopeDef) spec {
	p := sd.sc.Provider
	pc := providerConfig(cfg, p)
	if sd.svcKey != "" {
		if v, ok := pc.Services[sd.svcKey]; ok {
			return spec{v.MaxRPS, v.Burst} // the generator sets both
		}
		if v, ok := builtinServices[p][sd.svcKey]; ok {
			return v
		}
	}
	d, ok := builtinLeaf[p]
	if !ok {
		return genericLeaf
	}
	if pc.MaxRPS > 0 {
		d.rate = pc.MaxRPS
	}
	if pc.Burst > 0 {
		d.burst = pc.Burst
	}
	return d
}

func accountSpecIn(cfg resilience.Config, provider string) (spec, bool) {
	pc := providerConfig(cfg, provider)
	var s spec
	if provider == "azure" {
		s = spec{20, 200}
	}
	if pc.AccountMaxRPS != nil {
		s = spec{*pc.AccountMaxRPS, pc.AccountBurst}
	}
	return s, s.rate > 0
}

func globalSpecIn(cfg resilience.Config, provider string) (spec, bool) {
	pc := providerConfig(cfg, provider)
	if pc.GlobalMaxRPS == nil || *pc.GlobalMaxRPS <= 0 {
		return spec{}, false
	}
	return spec{*pc.GlobalMaxRPS, pc.GlobalBurst}, true
}

// leafKey is the scope of sd's leaf bucket and breaker.
func (sd scopeDef) leafKey() resilience.Scope {
	k := sd.sc
	if !sd.perOp {
		k.Operation = ""
	}
	return k
}

func (sd scopeDef) account() string { return sd.sc.Provider + "/" + sd.sc.Account }

func (sd scopeDef) service() resilience.Scope {
	s := sd.sc
	s.Operation = ""
	return s
}

// bucketKeys names the buckets a call of sd takes a token from under cfg.
func bucketKeys(cfg resilience.Config, sd scopeDef) []string {
	keys := []string{"leaf " + sd.leafKey().Key()}
	if _, ok := accountSpecIn(cfg, sd.sc.Provider); ok {
		keys = append(keys, "account "+sd.account())
	}
	if _, ok := globalSpecIn(cfg, sd.sc.Provider); ok {
		keys = append(keys, "provider "+sd.sc.Provider)
	}
	return keys
}

// bucketSpec returns the settings of the bucket named key under cfg.
func bucketSpec(cfg resilience.Config, key string) spec {
	kind, rest, _ := strings.Cut(key, " ")
	switch kind {
	case "account":
		p, _, _ := strings.Cut(rest, "/")
		s, _ := accountSpecIn(cfg, p)
		return s
	case "provider":
		s, _ := globalSpecIn(cfg, rest)
		return s
	}
	for _, sd := range modelScopes {
		if sd.leafKey().Key() == rest {
			return leafSpecIn(cfg, sd)
		}
	}
	panic("no bucket " + key)
}

// ---- configurations ----

var (
	genRates  = []float64{0.5, 1, 2, 5}
	genBursts = []float64{1, 2, 4}
)

func ptr[T any](v T) *T { return &v }

// genProvider draws a provider's settings: small rates, bursts, caps and
// thresholds, so that the limits bite; sometimes the built-in ones.
func genProvider(t *rapid.T, name string, services []string, steer map[string]bool) resilience.ProviderConfig {
	if rapid.IntRange(0, 4).Draw(t, name+" built-in") == 0 {
		return resilience.ProviderConfig{}
	}
	pc := resilience.ProviderConfig{
		MaxRPS:                 rapid.SampledFrom(genRates).Draw(t, name+" max_rps"),
		Burst:                  rapid.SampledFrom(genBursts).Draw(t, name+" burst"),
		MaxConcurrency:         rapid.IntRange(1, 3).Draw(t, name+" max_concurrency"),
		BreakerThreshold:       rapid.IntRange(1, 3).Draw(t, name+" breaker_threshold"),
		BreakerCooldownSeconds: rapid.SampledFrom([]float64{5, 20, 60}).Draw(t, name+" breaker_cooldown"),
		MaxRetries:             ptr(rapid.IntRange(0, 3).Draw(t, name+" max_retries")),
		BaseDelaySeconds:       rapid.SampledFrom([]float64{0.1, 0.5, 1}).Draw(t, name+" base_delay"),
		MaxBackoffSeconds:      rapid.SampledFrom([]float64{2, 8}).Draw(t, name+" max_backoff"),
		DeadlineSeconds:        rapid.SampledFrom([]float64{3, 20, 120}).Draw(t, name+" deadline"),
		RetryBudget:            ptr(rapid.SampledFrom([]int{0, 1, 4, 500}).Draw(t, name+" retry_budget")),
		BreakerWait:            rapid.IntRange(0, 3).Draw(t, name+" breaker_wait") == 0 && !steer[knownBreakerWaitSpin],
	}
	if rapid.IntRange(0, 2).Draw(t, name+" fixed rates") == 0 {
		pc.Adaptive = ptr(false)
	}
	if rapid.IntRange(0, 11).Draw(t, name+" disabled") == 0 {
		pc.Enabled = ptr(false)
	}
	if rapid.IntRange(0, 3).Draw(t, name+" provider bucket") == 0 {
		pc.GlobalMaxRPS = ptr(rapid.SampledFrom(genRates).Draw(t, name+" global_max_rps"))
		pc.GlobalBurst = rapid.SampledFrom(genBursts).Draw(t, name+" global_burst")
	}
	if rapid.IntRange(0, 3).Draw(t, name+" account bucket") == 0 {
		r := rapid.SampledFrom(append([]float64{0}, genRates...)).Draw(t, name+" account_max_rps")
		pc.AccountMaxRPS = &r
		if r > 0 {
			pc.AccountBurst = rapid.SampledFrom(genBursts).Draw(t, name+" account_burst")
		}
	}
	if len(services) > 0 {
		pc.Services = map[string]resilience.ServiceConfig{}
		for _, s := range services {
			pc.Services[s] = resilience.ServiceConfig{
				MaxRPS: rapid.SampledFrom(genRates).Draw(t, s+" max_rps"),
				Burst:  rapid.SampledFrom(genBursts).Draw(t, s+" burst"),
			}
		}
	}
	return pc
}

// genConfig draws a configuration.
func genConfig(t *rapid.T, steer map[string]bool) resilience.Config {
	cfg := resilience.Config{
		AWS:   genProvider(t, "aws", []string{"ec2", "iam"}, steer),
		Azure: genProvider(t, "azure", []string{"network"}, steer),
		GCP:   genProvider(t, "gcp", []string{"cloudasset.ListAssets"}, steer),
	}
	if rapid.IntRange(0, 14).Draw(t, "all disabled") == 0 {
		cfg.Enabled = ptr(false)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the model drew an invalid configuration: %v", err)
	}
	return cfg
}

// ---- the machine ----

type ctxKey struct{}

// idOf returns the id of the model's call or guard a context belongs to.
func idOf(ctx context.Context) int {
	if ctx == nil {
		return -1
	}
	if id, ok := ctx.Value(ctxKey{}).(int); ok {
		return id
	}
	return -1
}

// span is a count the model knows up to some uncertain units: between lo
// and lo+unsure.
type span struct{ lo, unsure int64 }

func (s span) holds(n int64) bool { return n >= s.lo && n <= s.lo+s.unsure }

// sendRec is one request sent: a token taken from each of buckets.
type sendRec struct {
	at      time.Time
	epoch   int
	buckets []string
	who     int
}

// window is a time from which every send took its token afresh: no call
// was between its token and its send (see checkTokens).
type window struct {
	at        time.Time
	seq       int            // the first send after it
	epochOnly bool           // only the sends of calls begun in the current epoch count
	counted   int            // the sends counted so far
	counts    map[string]int // by bucket
	what      string
}

// edge is a breaker change an observer saw.
type edge struct{ from, to state.BreakerState }

// govM is the model of one governor.
type govM struct {
	idx      int
	g        *resilience.Governor
	cfg      resilience.Config
	next     *resilience.Config // the configuration a Configure in progress applies
	changing bool               // a Configure or Reset is in progress: its events belong to neither side
	observed bool
	ctx      context.Context // the run's: carries stats
	stats    *resilience.Stats

	run       map[resilience.Scope]*resilience.Counters // events seen, per service scope
	life      resilience.Counters                       // events seen since the last Reset
	lifeMaybe resilience.Counters                       // those of calls begun before it (knownRetiredWait)
	resets    int
	began     map[int][2]int               // the epoch and the resets at which a call or guard began, by id
	byID      map[int]*resilience.Counters // events seen, per call or guard
	byIDLog   map[int][]string             // the events themselves, for messages
	nEvents   int
	transRun  map[resilience.Scope]*span // transient answers the governor heard
	transLife span

	breaker  map[resilience.Scope]state.BreakerState // as last checked, by leaf
	unknown  map[resilience.Scope]bool               // breakers a Configure or Reset may have renewed
	unsure   map[resilience.Scope]bool               // breakers whose changes in this step are not all known
	stepEdge map[resilience.Scope][]edge

	epoch    int // counts Configure and Reset
	epochWin *window
	sends    []sendRec
	windows  []*window
	specs    map[string]spec     // of the buckets in the current epoch
	held     map[string]int      // slots held, by provider/account
	heldBy   map[int]int         // slots held, by scope (index in modelScopes)
	paused   map[string]pauseRec // the last pause of each bucket in the current epoch
}

// pauseRec is a pause a bucket was set to hold, from its Pause event.
type pauseRec struct{ from, until time.Time }

type callM struct {
	id       int
	gov      *govM
	sd       int
	governed bool
	viaCall  bool
	ctx      context.Context
	cancel   context.CancelFunc
	ledger   *resilience.Ledger
	script   []answerStep
	epoch    int
	release  chan struct{}
	desc     string

	// under m.mu
	attempts  int
	inFn      bool
	waiting   bool
	last      answer
	lastErr   error
	done      bool
	err       error
	result    int
	panicked  any
	ctxDone   bool
	cancelled bool
	checked   bool
}

type answerStep struct {
	a     answer
	block bool
}

type guardM struct {
	id       int
	gov      *govM
	sd       int
	gd       *resilience.Guard
	ctx      context.Context
	cancel   context.CancelFunc
	ledger   *resilience.Ledger
	governed bool
	cmds     chan func()

	// under m.mu
	busy      bool
	verb      string
	slot      bool
	phase     string // loose: idle, sent, failed, retrying, final, closed, ended (by End: nothing more recorded until a new call's step)
	entered   int    // Enter and TryEnter successes while governed
	cancelled bool
	lastAfter answer
	gone      bool // ended and forgotten by the sequence
}

type machine struct {
	t         *rapid.T
	steer     map[string]bool // the known defects whose paths are avoided
	generic   bool            // this sequence calls a generic provider
	useGuards bool            // this sequence begins guards
	scopes    []int           // the scope indexes this sequence calls

	mu         sync.Mutex
	govs       []*govM
	deflt      *govM
	calls      []*callM
	guards     []*guardM
	nextID     int
	draining   bool
	violations []string
	touched    map[int]bool // scope indexes something happened to in this step
	wg         sync.WaitGroup
	stepName   string
}

// Bounds on what a sequence holds at once.
const (
	maxLiveCalls = 10
	maxGuards    = 3
	maxGovs      = 3
)

func newMachine(t *rapid.T) *machine {
	m := &machine{t: t, steer: steering(), touched: map[int]bool{}}
	m.generic = rapid.Bool().Draw(t, "generic provider")
	m.useGuards = rapid.IntRange(0, 2).Draw(t, "guards") > 0
	for i := range modelScopes {
		if i < firstGeneric || m.generic {
			m.scopes = append(m.scopes, i)
		}
	}
	for range 2 {
		m.newGov(genConfig(t, m.steer), true)
	}
	m.deflt = m.govs[0]
	resilience.SetDefault(m.govs[0].g)
	return m
}

// steerGuardsOn reports whether the sequence avoids retiring the scope
// state of live guards (knownOpen).
func (m *machine) steerGuardsOn() bool { return m.useGuards && m.steer[knownGuardStale] }

func (m *machine) newGov(cfg resilience.Config, observed bool) *govM {
	gv := &govM{idx: len(m.govs), cfg: cfg, observed: observed}
	gv.reset()
	gv.run = map[resilience.Scope]*resilience.Counters{}
	gv.byID = map[int]*resilience.Counters{}
	gv.byIDLog = map[int][]string{}
	gv.began = map[int][2]int{}
	gv.transRun = map[resilience.Scope]*span{}
	gv.held = map[string]int{}
	gv.heldBy = map[int]int{}
	gv.breaker = map[resilience.Scope]state.BreakerState{}
	gv.unknown = map[resilience.Scope]bool{}
	gv.unsure = map[resilience.Scope]bool{}
	gv.stepEdge = map[resilience.Scope][]edge{}
	gv.epochWin = &window{at: time.Now(), epochOnly: true, counts: map[string]int{}, what: "start of the epoch"}
	gv.specs = map[string]spec{}
	gv.paused = map[string]pauseRec{}
	if observed {
		opts := []resilience.GovernorOption{
			resilience.WithObserver(observe.Func(func(e observe.Event) { m.onEvent(gv, e) })),
			resilience.WithRandom(rand.NewPCG(uint64(len(m.govs)), 7)),
		}
		if m.steerGuardsOn() {
			opts = append(opts, resilience.WithReclaimAfter(1000*time.Hour)) // nothing idle is reclaimed
		}
		g, err := resilience.NewGovernor(cfg, opts...)
		if err != nil {
			m.t.Fatalf("NewGovernor: %v", err)
		}
		gv.g = g
	} else {
		gv.g = resilience.Default()
	}
	gv.ctx, gv.stats = resilience.WithStats(context.Background())
	m.govs = append(m.govs, gv)
	return gv
}

// reset forgets what the model knows of the governor's lifetime.
func (gv *govM) reset() {
	gv.life, gv.lifeMaybe = resilience.Counters{}, resilience.Counters{}
	gv.transLife = span{}
	gv.resets++
}

func (m *machine) violate(format string, args ...any) {
	m.violations = append(m.violations, fmt.Sprintf(format, args...))
}

// onEvent is every observed governor's observer.
func (m *machine) onEvent(gv *govM, e observe.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sd := scopeIndex(e.Scope)
	if sd < 0 {
		m.violate("event %v for a scope the model never called: %v", e.Kind, e.Scope)
		return
	}
	m.touched[sd] = true
	svc := modelScopes[sd].service()
	c := gv.run[svc]
	if c == nil {
		c = new(resilience.Counters)
		gv.run[svc] = c
	}
	tally(c, e)
	if e.Kind == observe.BreakerChange {
		reach(fmt.Sprintf("event breaker_change %v -> %v", e.From, e.To))
	} else if e.Kind == observe.GaveUp {
		reach("event gave_up " + e.Reason)
	} else {
		reach("event " + e.Kind.String())
	}
	id := idOf(e.Context)
	b := gv.began[id]
	stale := m.steer[knownRetiredWait] && b[1] < gv.resets
	if stale || gv.changing {
		tally(&gv.lifeMaybe, e)
	} else {
		tally(&gv.life, e)
	}
	if id < 0 {
		m.violate("event %v of %v without the call's context", e.Kind, e.Scope)
	}
	bc := gv.byID[id]
	if bc == nil {
		bc = new(resilience.Counters)
		gv.byID[id] = bc
	}
	tally(bc, e)
	gv.nEvents++
	gv.byIDLog[id] = append(gv.byIDLog[id], describeEvent(e))
	if e.Kind == observe.Pause && !gv.changing && b[0] == gv.epoch {
		// A pause set in this epoch by a call begun in it: its bucket is
		// the live one (see sent).
		k := "leaf " + modelScopes[sd].leafKey().Key()
		if e.Level == "account" {
			k = "account " + modelScopes[sd].account()
		}
		now := time.Now()
		if p, ok := gv.paused[k]; !ok || !p.until.After(now) {
			gv.paused[k] = pauseRec{from: now, until: now.Add(e.Until.Sub(e.Time))}
		} else if u := now.Add(e.Until.Sub(e.Time)); u.After(p.until) {
			gv.paused[k] = pauseRec{from: p.from, until: u}
		}
	}
	if e.Kind == observe.BreakerChange {
		if !legalEdge(edge{e.From, e.To}) {
			m.violate("illegal breaker change %v -> %v on %v", e.From, e.To, e.Scope)
		}
		k := modelScopes[sd].leafKey()
		if gv.changing || m.steer[knownRetiredWait] && b[0] < gv.epoch {
			// Perhaps a change of the retired breaker, perhaps of the live
			// one: this step's changes of k are not checked.
			gv.unknown[k] = true
			gv.unsure[k] = true
			return
		}
		gv.stepEdge[k] = append(gv.stepEdge[k], edge{e.From, e.To})
	}
}

// tally counts e in c as the governor's stats count it.
func tally(c *resilience.Counters, e observe.Event) {
	switch e.Kind {
	case observe.Call:
		c.Calls++
	case observe.Throttle:
		c.Throttled++
	case observe.Retry:
		c.Retries++
	case observe.GaveUp:
		c.GaveUp++
	case observe.Rejected:
		c.Rejected++
	case observe.BreakerChange:
		if e.To == state.Open {
			c.BreakerTrips++
		}
	case observe.Wait:
		c.Waits++
		c.Wait += e.Wait
	}
}

func scopeIndex(sc resilience.Scope) int {
	for i, sd := range modelScopes {
		if sd.sc == sc {
			return i
		}
	}
	return -1
}

// settle waits until every goroutine of the bubble is blocked.
func (m *machine) settle() { synctest.Wait() }

func (m *machine) actions() map[string]func(*rapid.T) {
	// rapid draws the keys evenly: the common steps have several.
	return map[string]func(*rapid.T){
		"":           m.check,
		"Do":         m.actDo,
		"Do ":        m.actDo,
		"Do  ":       m.actDo,
		"release":    m.actRelease,
		"release ":   m.actRelease,
		"cancel":     m.actCancel,
		"throttled":  m.actThrottled,
		"advance":    m.actAdvance,
		"advance ":   m.actAdvance,
		"Begin":      m.actBegin,
		"guard":      m.actGuard,
		"guard ":     m.actGuard,
		"guard  ":    m.actGuard,
		"guard   ":   m.actGuard,
		"forget":     m.actForget,
		"Configure":  m.actConfigure,
		"Reset":      m.actReset,
		"SetDefault": m.actSetDefault,
	}
}

func (m *machine) logf(t *rapid.T, format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	m.stepName = s
	t.Logf("[%v] %s", time.Now().Format("15:04:05.000"), s)
}

// pickGov draws a governor, or the process default (nil, resolved by the
// caller).
func (m *machine) pickGov(t *rapid.T) (*govM, bool) {
	i := rapid.IntRange(-1, len(m.govs)-1).Draw(t, "governor (-1: Default)")
	if i < 0 {
		return m.deflt, true
	}
	return m.govs[i], false
}

var callAnswers = []answer{aOK, aOK, aOK, aThrottle, aThrottle, aThrottleHint, aTransient, aTransient, aFatal, aLocal, aPanic}

// actDo launches a Do or Call.
func (m *machine) actDo(t *rapid.T) { m.actDoWith(t, callAnswers, 0, 4) }

func (m *machine) actDoWith(t *rapid.T, answers []answer, minN, maxN int) {
	m.mu.Lock()
	live := 0
	for _, c := range m.calls {
		if !c.done {
			live++
		}
	}
	m.mu.Unlock()
	if live >= maxLiveCalls {
		t.Skip("enough calls in flight")
	}
	gv, viaDefault := m.pickGov(t)
	sd := rapid.SampledFrom(m.scopes).Draw(t, "scope")
	n := rapid.IntRange(minN, maxN).Draw(t, "scripted attempts")
	script := make([]answerStep, n)
	for i := range script {
		script[i] = answerStep{
			a:     rapid.SampledFrom(answers).Draw(t, "answer"),
			block: rapid.IntRange(0, 2).Draw(t, "blocks") == 0,
		}
	}
	ctxKind := rapid.SampledFrom([]string{"plain", "plain", "plain", "plain", "plain", "plain", "cancelled", "timeout"}).Draw(t, "context")
	var timeout time.Duration
	if ctxKind == "timeout" {
		timeout = rapid.SampledFrom([]time.Duration{time.Second, 10 * time.Second, time.Minute}).Draw(t, "timeout")
	}
	viaCall := rapid.Bool().Draw(t, "Call")
	// Every draw is made: the model's state changes from here on.

	m.mu.Lock()
	m.nextID++
	c := &callM{id: m.nextID, gov: gv, sd: sd, viaCall: viaCall, script: script, epoch: gv.epoch, release: make(chan struct{}, 1)}
	m.mu.Unlock()
	c.governed = enabledIn(gv.cfg, modelScopes[sd].sc.Provider)
	ctx := context.WithValue(gv.ctx, ctxKey{}, c.id)
	ctx, c.ledger = resilience.WithLedger(ctx, fmt.Sprint("call ", c.id))
	switch ctxKind {
	case "cancelled":
		ctx, c.cancel = context.WithCancel(ctx)
		c.cancel()
		c.cancelled = true
	case "timeout":
		ctx, c.cancel = context.WithTimeout(ctx, timeout)
	default:
		ctx, c.cancel = context.WithCancel(ctx)
	}
	c.ctx = ctx
	var steps []string
	for _, s := range script {
		b := ""
		if s.block {
			b = "(blocks)"
		}
		steps = append(steps, s.a.String()+b)
	}
	verb := "Do"
	if viaCall {
		verb = "Call"
	}
	where := fmt.Sprintf("gov%d", gv.idx)
	if viaDefault {
		where = fmt.Sprintf("Default()=gov%d", gv.idx)
	}
	c.desc = fmt.Sprintf("%s #%d on %s %v ctx=%s answers=%v", verb, c.id, where, modelScopes[sd].sc, ctxKind, steps)
	m.logf(t, "%s", c.desc)

	var opts []resilience.CallOption
	if !viaDefault {
		opts = []resilience.CallOption{resilience.WithGovernor(gv.g)}
	}
	m.mu.Lock()
	m.calls = append(m.calls, c)
	gv.began[c.id] = [2]int{gv.epoch, gv.resets}
	m.mu.Unlock()
	m.wg.Add(1)
	go m.runCall(c, opts)
	m.settle()
}

// actThrottled launches a call that fails on every attempt it scripts,
// so that breakers open often enough for their cycle to be walked.
func (m *machine) actThrottled(t *rapid.T) {
	m.actDoWith(t, []answer{aThrottle, aTransient, aThrottleHint}, 2, 4)
}

func (m *machine) runCall(c *callM, opts []resilience.CallOption) {
	defer m.wg.Done()
	sc := modelScopes[c.sd].sc
	fn := func(ctx context.Context) (int, error) {
		m.mu.Lock()
		c.attempts++
		att := c.attempts
		st := answerStep{a: aOK}
		if att <= len(c.script) {
			st = c.script[att-1]
		}
		if m.draining {
			st.block = false
		}
		c.inFn = true
		m.fnEnter(c)
		m.mu.Unlock()
		defer func() {
			m.mu.Lock()
			c.inFn, c.waiting = false, false
			m.fnExit(c)
			m.mu.Unlock()
		}()
		if st.block {
			m.mu.Lock()
			c.waiting = true
			m.mu.Unlock()
			select {
			case <-c.release:
			case <-ctx.Done():
				m.mu.Lock()
				c.last, c.lastErr = aCtx, ctx.Err()
				m.mu.Unlock()
				return att, ctx.Err()
			}
		}
		err := st.a.err()
		m.mu.Lock()
		c.last, c.lastErr = st.a, err
		if st.a == aTransient && c.governed {
			m.heardTransient(c.gov, c.sd, ctx)
		}
		m.mu.Unlock()
		if st.a == aPanic {
			panic(panicValue{c.id})
		}
		return att, err
	}
	var res int
	var err error
	var pv any
	func() {
		defer func() { pv = recover() }()
		if c.viaCall {
			res, err = resilience.Call(c.ctx, sc, fn, opts...)
		} else {
			err = resilience.Do(c.ctx, sc, func(ctx context.Context) error {
				_, err := fn(ctx)
				return err
			}, opts...)
		}
	}()
	ctxErr := c.ctx.Err()
	if dl, ok := c.ctx.Deadline(); ctxErr == nil && ok && !time.Now().Before(dl) {
		// The deadline has come, and the context's timer, which fires at
		// the same instant, has not run yet: the governor reads a deadline
		// that has come as the context's end, as it must (its own timers
		// fire at that instant too, in either order).
		ctxErr = context.DeadlineExceeded
	}
	m.mu.Lock()
	c.done, c.err, c.result, c.panicked, c.ctxDone = true, err, res, pv, ctxErr != nil
	m.touched[c.sd] = true
	m.mu.Unlock()
}

// heardTransient counts a transient answer the governor hears from a call
// whose context is ctx, unless the context is done; one at the very
// instant of the context's deadline may go either way. m.mu is held.
func (m *machine) heardTransient(gv *govM, sd int, ctx context.Context) {
	dl, ok := ctx.Deadline()
	m.countTransient(gv, sd, ctx, ok && !time.Now().Before(dl) || gv.changing)
}

// mayHearTransient counts a transient answer the governor may or may not
// hear from a call whose context is ctx, unless the context is done. m.mu
// is held.
func (m *machine) mayHearTransient(gv *govM, sd int, ctx context.Context) {
	m.countTransient(gv, sd, ctx, true)
}

// countTransient counts a transient answer of a call whose context is
// ctx, heard for sure or not, unless the context is done. m.mu is held.
func (m *machine) countTransient(gv *govM, sd int, ctx context.Context, unsure bool) {
	if ctx.Err() != nil {
		return
	}
	svc := modelScopes[sd].service()
	s := gv.transRun[svc]
	if s == nil {
		s = new(span)
		gv.transRun[svc] = s
	}
	if unsure {
		s.unsure++
		gv.transLife.unsure++
		return
	}
	s.lo++
	gv.transLife.lo++
}

// fnEnter notes a governed attempt sent: a slot held, a token taken.
// m.mu is held.
func (m *machine) fnEnter(c *callM) {
	m.touched[c.sd] = true
	if !c.governed {
		return
	}
	m.takeSlot(c.gov, c.sd, fmt.Sprintf("call #%d", c.id))
	m.sent(c.gov, c.sd, c.epoch, c.id)
}

func (m *machine) fnExit(c *callM) {
	m.touched[c.sd] = true
	if c.governed {
		c.gov.held[modelScopes[c.sd].account()]--
		c.gov.heldBy[c.sd]--
	}
}

// takeSlot notes a slot taken and checks the cap in force. m.mu is held.
func (m *machine) takeSlot(gv *govM, sd int, who string) {
	acct := modelScopes[sd].account()
	gv.held[acct]++
	gv.heldBy[sd]++
	c := capIn(gv.cfg, modelScopes[sd].sc.Provider)
	if gv.next != nil { // a raised cap lets waiting calls in during Configure
		c = max(c, capIn(*gv.next, modelScopes[sd].sc.Provider))
	}
	if n := gv.held[acct]; n > c {
		m.violate("gov%d: %s is the %dth request in flight in %s, over the cap of %d", gv.idx, who, n, acct, c)
	}
}

// sent records a token taken from each of sd's buckets. m.mu is held.
// An attempt of a call whose provider is disabled takes none, though the
// call began governed; one sent while a Configure that enables or
// disables the provider is under way may or may not have, and is left
// out (the bucket checks bound the requests from above).
func (m *machine) sent(gv *govM, sd, epoch, who int) {
	p := modelScopes[sd].sc.Provider
	if !enabledIn(gv.cfg, p) || gv.changing && gv.next != nil && !enabledIn(*gv.next, p) {
		return
	}
	now, keys := time.Now(), bucketKeys(gv.cfg, modelScopes[sd])
	gv.sends = append(gv.sends, sendRec{at: now, epoch: epoch, buckets: keys, who: who})
	// A paused bucket lets no request go until its pause ends: not one
	// taken before the pause by a call still waiting (for another
	// bucket's token, or a slot) when it began. The instant the pause is
	// set is left out: a call sent then may be sent before it.
	for _, k := range keys {
		if p, ok := gv.paused[k]; ok && epoch == gv.epoch && !gv.changing && now.After(p.from) && now.Before(p.until) {
			m.violate("gov%d: the request of call or guard %d was sent %v into the pause of bucket %s, which ends %v later", gv.idx, who, now.Sub(p.from), k, p.until.Sub(now))
		}
	}
}

// actRelease lets a blocked attempt answer.
func (m *machine) actRelease(t *rapid.T) {
	m.mu.Lock()
	var waiting []*callM
	for _, c := range m.calls {
		if c.waiting {
			waiting = append(waiting, c)
		}
	}
	m.mu.Unlock()
	if len(waiting) == 0 {
		t.Skip("no attempt waits")
	}
	ids := make([]int, len(waiting))
	for i, c := range waiting {
		ids[i] = c.id
	}
	id := rapid.SampledFrom(ids).Draw(t, "call #")
	c := waiting[slices.Index(ids, id)]
	m.logf(t, "release call #%d (attempt %d)", c.id, c.attempts)
	m.mu.Lock()
	c.waiting = false
	m.mu.Unlock()
	c.release <- struct{}{}
	m.settle()
}

// actCancel cancels a call's or a guard's context.
func (m *machine) actCancel(t *rapid.T) {
	m.mu.Lock()
	var names []string
	var cancels []func()
	for _, c := range m.calls {
		if !c.done && !c.cancelled {
			names = append(names, fmt.Sprintf("call #%d", c.id))
			cancels = append(cancels, func() { c.cancelled = true; c.cancel() })
		}
	}
	for _, g := range m.guards {
		if !g.cancelled {
			names = append(names, fmt.Sprintf("guard #%d", g.id))
			cancels = append(cancels, func() { g.cancelled = true; g.cancel() })
		}
	}
	m.mu.Unlock()
	if len(names) == 0 {
		t.Skip("nothing to cancel")
	}
	i := rapid.IntRange(0, len(names)-1).Draw(t, "whose context")
	m.logf(t, "cancel %s", names[i])
	m.mu.Lock()
	cancels[i]()
	m.mu.Unlock()
	m.settle()
}

// advances are the time jumps: within a backoff, past a cooldown (5s,
// 20s, 60s), past the reclaim interval, and far beyond.
var advances = []time.Duration{
	10 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second,
	5 * time.Second, 5 * time.Second, 21 * time.Second, 30 * time.Second, 61 * time.Second, 61 * time.Second,
	5 * time.Minute, 20 * time.Minute,
}

// actAdvance lets virtual time pass.
func (m *machine) actAdvance(t *rapid.T) {
	d := rapid.SampledFrom(advances).Draw(t, "advance")
	m.logf(t, "advance %v", d)
	time.Sleep(d)
	m.settle()
}

// actBegin makes a guard (Governor.Begin) run by a goroutine of its own,
// which performs its verbs one at a time.
func (m *machine) actBegin(t *rapid.T) {
	if !m.useGuards {
		t.Skip("a sequence without guards")
	}
	if m.liveGuards() >= maxGuards {
		t.Skip("enough guards")
	}
	gv, viaDefault := m.pickGov(t)
	sd := rapid.SampledFrom(m.scopes).Draw(t, "scope")
	m.mu.Lock()
	m.nextID++
	gm := &guardM{id: m.nextID, gov: gv, sd: sd, cmds: make(chan func()), phase: "idle"}
	m.mu.Unlock()
	ctx := context.WithValue(gv.ctx, ctxKey{}, gm.id)
	ctx, gm.ledger = resilience.WithLedger(ctx, fmt.Sprint("guard ", gm.id))
	gm.ctx, gm.cancel = context.WithCancel(ctx)
	g := gv.g
	if viaDefault {
		g = resilience.Default()
	}
	gd, err := g.Begin(gm.ctx, modelScopes[sd].sc)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	gm.gd = gd
	gm.governed = enabledIn(gv.cfg, modelScopes[sd].sc.Provider)
	m.logf(t, "guard #%d = gov%d.Begin(%v) (governed: %v)", gm.id, gv.idx, modelScopes[sd].sc, gm.governed)
	m.mu.Lock()
	m.guards = append(m.guards, gm)
	gv.began[gm.id] = [2]int{gv.epoch, gv.resets}
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for f := range gm.cmds {
			f()
		}
	}()
}

// The verbs drawn for a guard, by its loose phase: mostly the order an SDK
// uses, sometimes any other.
var guardVerbs = map[string][]string{
	"idle":     {"Enter", "Enter", "Enter", "TryEnter", "TryEnter", "End", "Pause", "PauseAccount", "After", "Retry"},
	"ended":    {"Enter", "Enter", "Enter", "TryEnter", "TryEnter", "End", "Pause", "PauseAccount", "After", "Retry"},
	"closed":   {"Enter", "Enter", "TryEnter", "TryEnter", "End", "End", "End", "Release", "Pause"},
	"sent":     {"After", "After", "After", "After", "Release", "Release", "End", "Enter", "Pace"},
	"failed":   {"Retry", "Retry", "Retry", "Retry", "End", "End", "Resend", "Pace", "Enter", "After", "Challenged"},
	"retrying": {"Enter", "Enter", "Enter", "TryEnter", "Pace", "Pace", "After", "After", "End", "Release"},
	"final":    {"Retry", "Retry", "End", "End", "End", "Enter", "Challenged", "Challenged"},
}

var guardAnswers = []answer{aOK, aOK, aThrottle, aThrottle, aThrottleHint, aTransient, aTransient, aFatal, aLocal}

// actGuard performs one verb on an idle guard.
func (m *machine) actGuard(t *rapid.T) {
	m.mu.Lock()
	var idle []*guardM
	for _, g := range m.guards {
		if !g.busy && !g.gone {
			idle = append(idle, g)
		}
	}
	m.mu.Unlock()
	if len(idle) == 0 {
		t.Skip("no idle guard")
	}
	gm := pickGuard(t, idle)
	verb := rapid.SampledFrom(guardVerbs[gm.phase]).Draw(t, "verb")
	m.guardVerb(t, gm, verb)
}

// pickGuard draws one of gs by its id.
func pickGuard(t *rapid.T, gs []*guardM) *guardM {
	ids := make([]int, len(gs))
	for i, g := range gs {
		ids[i] = g.id
	}
	id := rapid.SampledFrom(ids).Draw(t, "guard #")
	return gs[slices.Index(ids, id)]
}

// guardVerb runs verb on gm's goroutine and waits for the bubble to
// settle; a verb that blocks (Enter, Pace) leaves the guard busy.
func (m *machine) guardVerb(t *rapid.T, gm *guardM, verb string) {
	gd := gm.gd
	gv := gm.gov
	sd := gm.sd
	var run func() string
	var tryErr error // TryEnter's
	label := verb
	switch verb {
	case "Enter", "TryEnter", "Pace":
		epoch := gv.epoch
		run = func() string {
			var err error
			switch verb {
			case "Enter":
				err = gd.Enter(gm.ctx)
			case "TryEnter":
				err = gd.TryEnter()
				tryErr = err
			default:
				err = gd.Pace(gm.ctx)
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			if verb != "Pace" && err == nil {
				if gm.governed {
					gm.entered++
					if !gm.slot {
						gm.slot = true
						m.takeSlot(gv, sd, fmt.Sprintf("guard #%d", gm.id))
					}
					m.sent(gv, sd, epoch, gm.id)
				}
				gm.phase = "sent"
			} else if verb == "Pace" && err == nil && gm.governed && (gm.phase == "failed" || gm.phase == "final") {
				// Pace asked Retry for the answer After recorded, and it
				// allowed the retry, sent now: its answer is heard at
				// After or End. (From the loose retrying phase, Pace may
				// have had nothing to ready.)
				gm.phase = "sent"
			} else if err != nil && verb != "Pace" {
				gm.phase = "closed"
			}
			return errText(err)
		}
	case "After":
		a := rapid.SampledFrom(guardAnswers).Draw(t, "answer")
		label = fmt.Sprintf("After(%v)", a)
		run = func() string {
			err := a.err()
			k := gd.After(err)
			m.mu.Lock()
			defer m.mu.Unlock()
			gm.lastAfter = a
			if a == aTransient && gm.governed {
				m.heardTransient(gv, sd, gm.ctx)
			}
			switch a {
			case aOK:
				gm.phase = "closed"
			case aThrottle, aThrottleHint, aTransient:
				gm.phase = "failed"
			default:
				gm.phase = "final"
			}
			return k.String()
		}
	case "Retry":
		w := rapid.SampledFrom([]time.Duration{0, 100 * time.Millisecond, time.Second}).Draw(t, "wait")
		label = fmt.Sprintf("Retry(%v)", w)
		run = func() string {
			d, err := gd.Retry(w)
			m.mu.Lock()
			defer m.mu.Unlock()
			if err == nil {
				gm.phase = "retrying"
			} else {
				gm.phase = "closed"
			}
			return fmt.Sprintf("%v, %s", d, errText(err))
		}
	case "Resend":
		run = func() string {
			ok := gd.Resend()
			m.mu.Lock()
			defer m.mu.Unlock()
			if ok {
				gm.phase = "retrying"
			}
			return fmt.Sprint(ok)
		}
	case "Challenged":
		// The resend of a request whose last answer was a challenge: the
		// request ends (its slot given back, its answer recorded by
		// After already) and the next Enter sends it again; from any
		// other phase the call is ended with its last answer.
		run = func() string {
			m.letGoOfSlot(gm)
			attemptctx.ResendChallenged(gd)
			m.mu.Lock()
			defer m.mu.Unlock()
			gm.phase = "ended"
			return ""
		}
	case "Release", "End":
		var a answer
		if verb == "End" {
			a = rapid.SampledFrom(guardAnswers).Draw(t, "answer")
			label = fmt.Sprintf("End(%v)", a)
		}
		run = func() string {
			m.letGoOfSlot(gm)
			if verb == "End" {
				gd.End(a.err())
			} else {
				gd.Release()
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			if verb == "End" {
				// An answer no After saw, of an attempt sent or of a
				// call never entered, is recorded as After records it.
				// The loose closed and retrying phases may be either (a
				// TryEnter's refusal records nothing, nor does a Retry
				// of a guard After never told of an answer) or neither
				// (an answer recorded, a refusal of Enter, a retry). A
				// call ended already records nothing more.
				if a == aTransient && gm.governed {
					switch gm.phase {
					case "sent", "idle":
						m.heardTransient(gv, sd, gm.ctx)
					case "closed", "retrying":
						m.mayHearTransient(gv, sd, gm.ctx)
					}
				}
				gm.phase = "ended"
			}
			return ""
		}
	case "Pause", "PauseAccount":
		d := rapid.SampledFrom([]time.Duration{0, 500 * time.Millisecond, 3 * time.Second, 10 * time.Minute}).Draw(t, "pause")
		label = fmt.Sprintf("%s(%v)", verb, d)
		run = func() string {
			if verb == "Pause" {
				gd.Pause(d)
			} else {
				gd.PauseAccount(d)
			}
			return ""
		}
	default:
		t.Fatalf("no verb %s", verb)
	}
	m.logf(t, "guard #%d.%s", gm.id, label)

	var before sideEffects
	if verb == "TryEnter" {
		before = m.sideEffects(gm)
	}
	var out string
	done := false
	m.mu.Lock()
	gm.busy, gm.verb = true, label
	m.touched[sd] = true
	m.mu.Unlock()
	gm.cmds <- func() {
		defer func() {
			r := recover()
			m.mu.Lock()
			defer m.mu.Unlock()
			if r != nil {
				m.violate("guard #%d.%s panicked: %v", gm.id, label, r)
			}
			gm.busy, done = false, true
			m.touched[sd] = true
		}()
		out = run()
	}
	m.settle()
	m.mu.Lock()
	finished, res := done, out
	m.mu.Unlock()
	if !finished {
		t.Logf("  ... guard #%d.%s waits", gm.id, label)
		return
	}
	t.Logf("  -> %s", res)
	outcome, _, _ := strings.Cut(res, ":")
	reach(fmt.Sprintf("guard %s -> %s", verb, outcome))
	if verb == "TryEnter" && refused(tryErr) {
		m.checkNoSideEffects(t, gm, before, res)
	}
}

// letGoOfSlot has the model let go of the slot gm holds, before the verb
// that gives it back runs: a call waiting for it may take it before that
// verb returns.
func (m *machine) letGoOfSlot(gm *guardM) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if gm.slot {
		gm.slot = false
		gm.gov.held[modelScopes[gm.sd].account()]--
		gm.gov.heldBy[gm.sd]--
	}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%T: %v", err, err)
}

// liveGuards counts the guards not forgotten.
func (m *machine) liveGuards() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, g := range m.guards {
		if !g.gone {
			n++
		}
	}
	return n
}

// actForget ends an idle guard and forgets it.
func (m *machine) actForget(t *rapid.T) {
	m.mu.Lock()
	var idle []*guardM
	for _, g := range m.guards {
		if !g.busy && !g.gone {
			idle = append(idle, g)
		}
	}
	m.mu.Unlock()
	if len(idle) == 0 {
		t.Skip("no idle guard")
	}
	gm := pickGuard(t, idle)
	m.logf(t, "guard #%d.End(nil), forgotten", gm.id)
	m.endGuard(gm)
	m.mu.Lock()
	gm.gone = true
	m.mu.Unlock()
}

// steerGuards skips a step that would retire the state live guards hold
// (knownGuardStale).
func (m *machine) steerGuards(t *rapid.T) {
	if m.steerGuardsOn() && m.liveGuards() > 0 {
		t.Skip("known defect: a guard keeps retired state (knownOpen)")
	}
}

// actConfigure applies a new configuration to a governor.
func (m *machine) actConfigure(t *rapid.T) {
	m.steerGuards(t)
	gv, viaDefault := m.pickGov(t)
	cfg := genConfig(t, m.steer)
	m.logf(t, "gov%d.Configure(%s) (via package Configure: %v)", gv.idx, describeConfig(cfg), viaDefault)
	m.mu.Lock()
	gv.next, gv.changing = &cfg, true
	m.mu.Unlock()
	var err error
	if viaDefault {
		err = resilience.Configure(cfg)
	} else {
		err = gv.g.Configure(cfg)
	}
	if err != nil {
		t.Fatalf("Configure: %v", err)
	}
	m.mu.Lock()
	gv.cfg, gv.next, gv.changing = cfg, nil, false
	m.newEpoch(gv)
	m.mu.Unlock()
	m.settle()
}

// newEpoch starts a new stretch of the governor's buckets and breakers:
// Configure or Reset may have made them afresh. m.mu is held.
func (m *machine) newEpoch(gv *govM) {
	gv.epoch++
	gv.epochWin = &window{at: time.Now(), seq: len(gv.sends), epochOnly: true, counts: map[string]int{}, what: "start of the epoch"}
	gv.windows = nil
	gv.specs = map[string]spec{}
	gv.paused = map[string]pauseRec{}
	for k := range gv.breaker {
		gv.unknown[k] = true
	}
}

// actReset makes a governor forget what it learned.
func (m *machine) actReset(t *rapid.T) {
	m.steerGuards(t)
	gv, _ := m.pickGov(t)
	m.logf(t, "gov%d.Reset()", gv.idx)
	m.mu.Lock()
	gv.reset() // first: what the Reset's own moment records may land on either side
	gv.changing = true
	m.mu.Unlock()
	gv.g.Reset()
	m.mu.Lock()
	gv.changing = false
	m.newEpoch(gv)
	m.mu.Unlock()
	m.settle()
}

// actSetDefault makes another governor the process's, or a fresh one.
func (m *machine) actSetDefault(t *rapid.T) {
	fresh := len(m.govs) < maxGovs && !m.steerGuardsOn() && rapid.IntRange(0, 3).Draw(t, "SetDefault(nil)") == 0
	if fresh {
		m.logf(t, "SetDefault(nil) -> gov%d, unobserved, built-in settings", len(m.govs))
		resilience.SetDefault(nil)
		m.mu.Lock()
		m.deflt = m.newGov(resilience.Config{}, false)
		m.mu.Unlock()
		return
	}
	i := rapid.IntRange(0, len(m.govs)-1).Draw(t, "SetDefault(gov)")
	m.logf(t, "SetDefault(gov%d)", i)
	resilience.SetDefault(m.govs[i].g)
	m.mu.Lock()
	m.deflt = m.govs[i]
	m.mu.Unlock()
}

func describeConfig(cfg resilience.Config) string {
	var b strings.Builder
	if cfg.Enabled != nil {
		fmt.Fprintf(&b, "enabled=%v ", *cfg.Enabled)
	}
	for _, p := range []struct {
		name string
		pc   resilience.ProviderConfig
	}{{"aws", cfg.AWS}, {"azure", cfg.Azure}, {"gcp", cfg.GCP}} {
		pc := p.pc
		if pc.MaxRPS == 0 {
			fmt.Fprintf(&b, "%s:built-in ", p.name)
			continue
		}
		fmt.Fprintf(&b, "%s:{rps %v/%v cap %d breaker %d/%vs retries %d deadline %vs budget %d", p.name, pc.MaxRPS, pc.Burst,
			pc.MaxConcurrency, pc.BreakerThreshold, pc.BreakerCooldownSeconds, *pc.MaxRetries, pc.DeadlineSeconds, *pc.RetryBudget)
		if pc.BreakerWait {
			b.WriteString(" breaker_wait")
		}
		if pc.Adaptive != nil {
			b.WriteString(" fixed")
		}
		if pc.Enabled != nil {
			b.WriteString(" disabled")
		}
		if pc.GlobalMaxRPS != nil {
			fmt.Fprintf(&b, " provider %v/%v", *pc.GlobalMaxRPS, pc.GlobalBurst)
		}
		if pc.AccountMaxRPS != nil {
			fmt.Fprintf(&b, " account %v/%v", *pc.AccountMaxRPS, pc.AccountBurst)
		}
		keys := make([]string, 0, len(pc.Services))
		for k := range pc.Services {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s %v/%v", k, pc.Services[k].MaxRPS, pc.Services[k].Burst)
		}
		b.WriteString("} ")
	}
	return strings.TrimSpace(b.String())
}

// drain ends the sequence: the blocked attempts answer, the guards end,
// and virtual time runs until every call is over (each is bounded by its
// deadline, or waits for a slot another call holds). Then the invariants
// are checked once more, with every slot given back.
func (m *machine) drain(t *rapid.T) {
	m.logf(t, "drain")
	m.mu.Lock()
	m.draining = true
	for _, c := range m.calls {
		if c.waiting {
			c.waiting = false
			c.release <- struct{}{}
		}
	}
	m.mu.Unlock()
	m.settle()
	deadline := time.Now().Add(48 * time.Hour)
	for {
		m.mu.Lock()
		var idle []*guardM
		busy := 0
		for _, g := range m.guards {
			if g.busy {
				busy++
			} else if !g.gone && (g.phase != "idle" && g.phase != "ended" || g.slot) {
				idle = append(idle, g)
			}
		}
		running := 0
		for _, c := range m.calls {
			if !c.done {
				running++
			}
		}
		m.mu.Unlock()
		for _, g := range idle {
			m.endGuard(g)
		}
		if busy == 0 && running == 0 && len(idle) == 0 {
			break
		}
		if time.Now().After(deadline) {
			m.mu.Lock()
			var stuck []string
			for _, c := range m.calls {
				if !c.done {
					stuck = append(stuck, fmt.Sprintf("%s (attempts %d, in fn %v)", c.desc, c.attempts, c.inFn))
				}
			}
			for _, g := range m.guards {
				if g.busy {
					stuck = append(stuck, fmt.Sprintf("guard #%d.%s", g.id, g.verb))
				}
			}
			m.mu.Unlock()
			t.Fatalf("not over after 48h of virtual time (deadlock?): %s", strings.Join(stuck, "; "))
		}
		time.Sleep(10 * time.Minute)
		m.settle()
	}
	m.check(t)
	for _, gv := range m.govs {
		for _, i := range m.scopes {
			sd := modelScopes[i]
			if n := gv.g.Inspect(sd.sc).InFlight; n != 0 {
				t.Fatalf("gov%d: %d slot(s) of %s still held after every call ended", gv.idx, n, sd.account())
			}
		}
	}
}

// endGuard runs End(nil) on an idle guard.
func (m *machine) endGuard(gm *guardM) {
	done := make(chan struct{})
	m.mu.Lock()
	gm.busy = true
	m.touched[gm.sd] = true
	m.mu.Unlock()
	gm.cmds <- func() {
		defer close(done)
		m.letGoOfSlot(gm) // first, as in guardVerb
		gm.gd.End(nil)
		m.mu.Lock()
		defer m.mu.Unlock()
		gm.phase, gm.busy = "ended", false
	}
	<-done
	m.settle()
}

// abandon ends every goroutine of the sequence, whatever state it was
// left in by a failure: the bubble must end with none.
func (m *machine) abandon() {
	func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.draining = true
		for _, c := range m.calls {
			c.cancel()
			select {
			case c.release <- struct{}{}:
			default:
			}
		}
		for _, g := range m.guards {
			g.cancel()
		}
	}()
	synctest.Wait()
	for _, g := range m.guards {
		close(g.cmds)
	}
	for range 100 {
		m.mu.Lock()
		left := 0
		for _, c := range m.calls {
			if !c.done {
				left++
			}
		}
		m.mu.Unlock()
		if left == 0 {
			break
		}
		time.Sleep(time.Hour)
	}
	m.wg.Wait()
}

func describeEvent(e observe.Event) string {
	switch e.Kind {
	case observe.BreakerChange:
		return fmt.Sprintf("%v %v->%v", e.Kind, e.From, e.To)
	case observe.Wait:
		return fmt.Sprintf("%v %v %s", e.Kind, e.Wait, e.Level)
	case observe.GaveUp:
		return fmt.Sprintf("%v %s", e.Kind, e.Reason)
	}
	return e.Kind.String()
}
