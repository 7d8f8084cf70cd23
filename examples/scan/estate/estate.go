// Package estate is a fake multi-account AWS estate that throttles like
// AWS, for measuring inventory scans made with the real AWS SDK for Go v2.
//
// An Estate is an http.Handler answering, in each service's own wire
// protocol, enough of four services for paginated inventory listings and
// the detail calls that follow them:
//
//   - EC2 (ec2query): DescribeInstances, DescribeVpcs, DescribeSubnets,
//     DescribeSecurityGroups;
//   - IAM (awsQuery, global, signed for us-east-1): ListRoles, GetRole;
//   - Secrets Manager (awsJson1.1): ListSecrets, DescribeSecret;
//   - DynamoDB (awsJson1.0): ListTables, DescribeTable.
//
// A request's account comes from the access key id of its SigV4
// Authorization header (AccessKeyID makes the key of an account), its
// region and service from the header's credential scope; signatures are
// not checked. What each account holds is generated from a seed, the same
// for every run, with Sizes resources per account and region.
//
// Each action of each account and region has its own token bucket (Limit;
// DefaultLimit lists the built-in rates). A request over the limit gets the
// service's throttling answer: EC2's 503 RequestLimitExceeded, IAM's 400
// Throttling "Rate exceeded", the JSON services' 400 ThrottlingException
// "Rate exceeded". Knobs set while the estate serves make things worse: an
// action throttled for good (SetDead), a pause that answers every request
// with a throttle and a Retry-After header until it ends (Pause), other
// limits (SetLimit). The estate counts requests and throttles per scope
// (Counts). It is safe for concurrent use.
//
// Start serves an estate on a loopback port; a client reaches it with the
// URL as the aws.Config's BaseEndpoint.
package estate

import (
	"math"
	"net/http"
	"sync"
	"time"
)

// A Limit is a token bucket: Rate requests a second on average, Burst at
// once after a quiet spell. It is a plain value that several goroutines
// may read at once while none changes it. The zero Limit, given to
// SetLimit, lets one request through (a Burst under 1 is 1) and throttles
// every later one, as it never refills.
type Limit struct {
	Rate  float64
	Burst int
}

// defaultLimits are the built-in limits, per service:Action.
var defaultLimits = map[string]Limit{
	"ec2:DescribeInstances":         {Rate: 20, Burst: 100},
	"ec2:DescribeVpcs":              {Rate: 20, Burst: 100},
	"ec2:DescribeSubnets":           {Rate: 20, Burst: 100},
	"ec2:DescribeSecurityGroups":    {Rate: 20, Burst: 100},
	"iam:ListRoles":                 {Rate: 10, Burst: 10},
	"iam:GetRole":                   {Rate: 20, Burst: 20},
	"secretsmanager:ListSecrets":    {Rate: 10, Burst: 10},
	"secretsmanager:DescribeSecret": {Rate: 20, Burst: 20},
	"dynamodb:ListTables":           {Rate: 10, Burst: 10},
	"dynamodb:DescribeTable":        {Rate: 20, Burst: 20},
}

// fallbackLimit is the limit of an action defaultLimits does not list.
var fallbackLimit = Limit{Rate: 10, Burst: 10}

// DefaultLimit returns the built-in limit of a service's action, the same
// in every account and region: EC2's describes at 20 rps with a burst of
// 100 (EC2's own bucket for them), the detail calls (GetRole,
// DescribeSecret, DescribeTable) at 20 rps (burst 20), the other listings
// and anything else at 10 rps (burst 10).
func DefaultLimit(service, action string) Limit {
	if l, ok := defaultLimits[service+":"+action]; ok {
		return l
	}
	return fallbackLimit
}

// Config is what New builds an estate from, a plain value that several
// goroutines may read at once while none changes it. The zero Config is
// the estate of seed 0 at DefaultSizes.
type Config struct {
	// Seed chooses the generated names and ids; the same seed gives the
	// same estate.
	Seed uint64
	// Sizes is how many resources each account holds; zero: DefaultSizes.
	Sizes Sizes
}

// Count is what an estate answered in one scope: every request, and those
// it throttled. Counts returns copies, which the estate does not change:
// several goroutines may read one at once. The zero Count is a scope no
// request reached.
type Count struct {
	Requests  int64
	Throttled int64
}

// Estate is the fake AWS estate, an http.Handler. It is safe for
// concurrent use: ServeHTTP, the knobs (SetLimit, SetDead, Pause) and the
// readers (LimitOf, Dead, PausedUntil, Counts) may be called from any
// goroutine, while it serves. Make one with New; the zero Estate is not
// usable (it panics on the first request it can read).
type Estate struct {
	seed  uint64
	sizes Sizes

	mu       sync.Mutex
	limits   []limitRule // SetLimit's rules, the latest last
	dead     []Scope
	pauses   []pause
	buckets  map[Scope]*bucket
	counts   map[Scope]*Count
	regional map[[2]string]*regional
	global   map[string]*global
	requests uint64 // request ids
}

type limitRule struct {
	sel Scope
	lim Limit
}

type pause struct {
	sel   Scope
	until time.Time
}

// bucket is one scope's token bucket.
type bucket struct {
	lim    Limit
	tokens float64
	last   time.Time
}

// take refills the bucket to now and takes a token if it holds one.
func (b *bucket) take(now time.Time) bool {
	b.tokens = math.Min(float64(b.lim.Burst), b.tokens+now.Sub(b.last).Seconds()*b.lim.Rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// New returns an estate built from cfg, at its default limits, with no
// knob set.
func New(cfg Config) *Estate {
	if cfg.Sizes == (Sizes{}) {
		cfg.Sizes = DefaultSizes
	}
	return &Estate{
		seed:     cfg.Seed,
		sizes:    cfg.Sizes,
		buckets:  map[Scope]*bucket{},
		counts:   map[Scope]*Count{},
		regional: map[[2]string]*regional{},
		global:   map[string]*global{},
	}
}

// Sizes returns how many resources each account holds.
func (e *Estate) Sizes() Sizes { return e.sizes }

// SetLimit sets the limit of every action sel selects, over the defaults
// and earlier calls. The buckets it selects start again full.
func (e *Estate) SetLimit(sel Scope, l Limit) {
	l.Burst = max(l.Burst, 1)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.limits = append(e.limits, limitRule{sel, l})
	for sc := range e.buckets {
		if sel.Matches(sc) {
			delete(e.buckets, sc)
		}
	}
}

// LimitOf returns the limit of the action of sc, a scope with every field
// set.
func (e *Estate) LimitOf(sc Scope) Limit {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.limitLocked(sc)
}

func (e *Estate) limitLocked(sc Scope) Limit {
	for i := len(e.limits) - 1; i >= 0; i-- {
		if e.limits[i].sel.Matches(sc) {
			return e.limits[i].lim
		}
	}
	return DefaultLimit(sc.Service, sc.Action)
}

// SetDead throttles every request sel selects, from now on and for good,
// without a Retry-After.
func (e *Estate) SetDead(sel Scope) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dead = append(e.dead, sel)
}

// Dead reports whether the requests of sc are throttled for good.
func (e *Estate) Dead(sc Scope) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.deadLocked(sc)
}

func (e *Estate) deadLocked(sc Scope) bool {
	for _, sel := range e.dead {
		if sel.Matches(sc) {
			return true
		}
	}
	return false
}

// Pause throttles every request sel selects for d from now, each answer
// carrying a Retry-After header with the seconds left (rounded up).
func (e *Estate) Pause(sel Scope, d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pauses = append(e.pauses, pause{sel, time.Now().Add(d)})
}

// PausedUntil returns when the last pause of sc ends, or the zero time if
// none was set.
func (e *Estate) PausedUntil(sc Scope) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pausedLocked(sc)
}

func (e *Estate) pausedLocked(sc Scope) time.Time {
	var until time.Time
	for _, p := range e.pauses {
		if p.sel.Matches(sc) && p.until.After(until) {
			until = p.until
		}
	}
	return until
}

// Counts returns the requests and throttles of every scope the estate was
// asked about, each scope with every field set.
func (e *Estate) Counts() map[Scope]Count {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[Scope]Count, len(e.counts))
	for sc, c := range e.counts {
		out[sc] = *c
	}
	return out
}

// admit counts a request to sc and decides whether it is throttled, and
// with which Retry-After (in whole seconds; 0: none).
func (e *Estate) admit(sc Scope) (throttled bool, retryAfter int) {
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.counts[sc]
	if c == nil {
		c = &Count{}
		e.counts[sc] = c
	}
	c.Requests++
	switch until := e.pausedLocked(sc); {
	case e.deadLocked(sc):
		throttled = true
	case now.Before(until):
		throttled, retryAfter = true, int(math.Ceil(until.Sub(now).Seconds()))
	default:
		b := e.buckets[sc]
		if b == nil {
			lim := e.limitLocked(sc)
			b = &bucket{lim: lim, tokens: float64(lim.Burst), last: now}
			e.buckets[sc] = b
		}
		throttled = !b.take(now)
	}
	if throttled {
		c.Throttled++
	}
	return throttled, retryAfter
}

// regionalOf returns what account holds in region.
func (e *Estate) regionalOf(account, region string) *regional {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := [2]string{account, region}
	g := e.regional[k]
	if g == nil {
		g = genRegional(e.seed, e.sizes, account, region)
		e.regional[k] = g
	}
	return g
}

// globalOf returns what account holds outside regions.
func (e *Estate) globalOf(account string) *global {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.global[account]
	if g == nil {
		g = genGlobal(e.seed, e.sizes, account)
		e.global[account] = g
	}
	return g
}

// requestID returns a fresh request id.
func (e *Estate) requestID() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requests++
	return e.requests
}

// ServeHTTP answers one AWS API request: an error for a request it cannot
// read or an action it does not know, a throttle when a knob or the
// action's bucket says so, else the action's answer.
func (e *Estate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, err := readRequest(r)
	if err != nil {
		req.writeError(w, e.requestID(), err)
		return
	}
	act, ok := actions[actionKey{req.scope.Service, req.scope.Action}]
	if !ok {
		req.writeError(w, e.requestID(), unknownAction(req))
		return
	}
	if throttled, after := e.admit(req.scope); throttled {
		if after > 0 {
			w.Header().Set("Retry-After", itoa(after))
		}
		req.writeError(w, e.requestID(), throttleOf(req.scope.Service))
		return
	}
	body, err := act(e, req)
	if err != nil {
		req.writeError(w, e.requestID(), err)
		return
	}
	req.writeResult(w, e.requestID(), body)
}
