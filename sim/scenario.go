package sim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/internal/yamlconf"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
)

// Scenario is one simulated run: a provider model, a workload, the settings
// of the client strategies, and the strategies to compare. Runs and the
// Scenario's methods only read it, so the Runs of one Scenario may execute
// from several goroutines at once (the command runs its strategies so), as
// long as nothing changes it meanwhile. The zero Scenario is refused by
// Validate ("workload.workers: must be > 0"), as Parse, LoadFile and
// Run.Execute refuse a scenario it refuses.
type Scenario struct {
	Name        string
	Description string
	Seed        uint64
	// TimeLimit ends a run that has not finished after this much simulated
	// time; its unfinished calls count as lost. Zero (or less) is an hour;
	// a file's time_limit_seconds must be more than zero.
	TimeLimit time.Duration

	Workload Workload
	Provider ProviderSpec
	Client   ClientSpec
	// Governor is the ratelimit configuration of the cloudg strategies
	// (their controller is set per strategy).
	Governor resilience.Config
	// SDK is the aws section that cloudgaws reads (retry_mode,
	// max_retries), for the strategies that install it; the zero value is
	// cloudgaws's defaults.
	SDK cloudgaws.Config
	// Strategies to run, in table order; empty means every strategy of
	// the scenario's family (StrategyNames, or EstateStrategyNames for an
	// estate). A reference (ReferenceNames) runs only when named here.
	Strategies []string
	// Estate, when set, makes the workload a scan of an estate (accounts x
	// regions x services, listings that page and a detail call per item)
	// run by a scheduler over W workers, instead of Calls calls spread over
	// Actions; Workload.Actions then lists its scopes' keys and
	// Workload.Calls its calls (see NewEstate).
	Estate *Estate
	// Model holds the figures a discrete-event model of the scenario
	// predicted (sim/README.md, "The model's figures beside ours"), by
	// strategy, to print beside the measured ones.
	Model map[string]ModelFigures

	observer observe.Observer // the cloudg strategies' governors report to it; tests set it
}

// ModelFigures are what the discrete-event model predicted for a strategy,
// a plain value that several goroutines may read at once while none
// changes it. The zero ModelFigures gives no efficiency and no makespan,
// but a rejected share of 0.
type ModelFigures struct {
	Efficiency float64       // ideal makespan / makespan; 0: not given
	Rejected   float64       // share of requests rejected, 0..1; <0: not given
	Makespan   time.Duration // 0: not given
}

// Workload is the work of a run: Calls logical calls spread round-robin over
// Actions, made by Workers goroutines that each make one call at a time.
// Like its Scenario, it is a plain value that several goroutines may read
// at once while none changes it. The zero Workload is refused by
// Scenario.Validate ("workload.workers: must be > 0").
type Workload struct {
	Workers int
	Calls   int
	Actions []string
}

// ProviderSpec models the provider side: a token bucket per action (the
// scope the provider throttles), with its own burst and refill. Like its
// Scenario, it is a plain value that several goroutines may read at once
// while none changes it (each Run's Provider keeps its buckets apart). The
// zero ProviderSpec is refused by Scenario.Validate ("provider.service:
// must not be empty").
type ProviderSpec struct {
	Service string // ec2
	Account string
	Region  string

	Rate  float64          // true refill per action, requests per second
	Burst float64          // bucket capacity per action
	Per   map[string]Limit // per-action overrides of Rate and Burst

	// Changes change the limit mid-run.
	Changes []Change
	// Tenant is an invisible second tenant sharing the buckets: it takes
	// its rate out of every refill, so the effective limit is lower than the
	// provider's.
	Tenant *Tenant
	// Pauses answer every request of an action within a window with a
	// throttle that carries the time left in the window as Retry-After
	// (seconds, rounded up) and x-amz-retry-after (milliseconds), whatever
	// RetryAfter says: the provider pausing a scope. The bucket refills
	// meanwhile.
	Pauses []Pause
	// Dead actions are throttled for good: every request is rejected, with
	// a one-second hint when RetryAfter is on.
	Dead []string

	// RetryAfter makes throttling answers carry a hint: Retry-After
	// (seconds) and x-amz-retry-after (milliseconds), the time until the
	// bucket has a token again.
	RetryAfter bool
	// Latency of every answer: log-normal with this median and 99th
	// percentile.
	LatencyMedian time.Duration
	LatencyP99    time.Duration
	// TransientRate is the share of admitted requests that fail with a 500
	// InternalError (they use their token).
	TransientRate float64
	// Outages answer every request with 503 ServiceUnavailable.
	Outages []Window
}

// Limit is a bucket's refill and capacity, a plain value that several
// goroutines may read at once while none changes it. In ProviderSpec.Per a
// zero field leaves the provider's Rate or Burst: the zero Limit overrides
// nothing.
type Limit struct {
	Rate  float64
	Burst float64
}

// Change sets the limit of one action ("" for all) at a time of the run. It
// is a plain value that several goroutines may read at once while none
// changes it. The zero Change, which would stop every action's refill at
// the start, is refused by Scenario.Validate ("provider.changes[i].rate:
// must be > 0").
type Change struct {
	At     time.Duration
	Action string
	Rate   float64
	Burst  float64 // 0: unchanged
}

// Tenant is a second tenant of the provider's buckets. It takes Rate (or
// Share of the action's limit) out of the refill of every action it uses,
// from From until Until; with Walk, only a level between 0 and 1 of it,
// which moves over time. It is a plain value that several goroutines may
// read at once while none changes it (each Run draws its walk apart). The
// zero Tenant, which would take nothing, is refused by Scenario.Validate
// ("provider.tenant.rate: must be > 0"); a nil one is no tenant.
type Tenant struct {
	Rate    float64  // requests per second per action it uses; with Walk, the most it takes
	Share   float64  // instead of Rate (when > 0): this share of the action's limit at the time
	Action  string   // "" and no Actions: every action
	Actions []string // the actions it uses besides Action
	From    time.Duration
	Until   time.Duration // 0: until the end
	Walk    *Walk         // nil: it takes all of Rate (or Share) all the time
}

// Walk is how a tenant's use of the limit moves: a random walk of a level
// between 0 and 1, seeded with the run's seed, which starts at Start and
// every Every moves by up to Step either way (a move past 0 or 1 is
// reflected back). The tenant takes the level times its Rate (or Share of
// the limit), one level a step: the limit left to the other clients moves
// in steps, at times no client is told. It is a plain value that several
// goroutines may read at once while none changes it. The zero Walk is
// refused by Scenario.Validate ("provider.tenant.walk.every_seconds: must
// be > 0"); a nil one is a tenant that takes all of its rate.
type Walk struct {
	Every time.Duration
	Step  float64
	Start float64
}

// Pause is a window in which the provider answers every request of Action
// with a throttle carrying Retry-After. From and To count from the start
// of the run or, with AtFirst, from the action's first request: the
// provider pauses the scope when a client first meets it (for the ideal,
// a client that meets it at once). It is a plain value that several
// goroutines may read at once while none changes it. The zero Pause is
// refused by Scenario.Validate ("provider.pauses[i].action: must name an
// action").
type Pause struct {
	Action   string
	From, To time.Duration
	AtFirst  bool
}

// Window is a span of the run, a plain value that several goroutines may
// read at once while none changes it. The zero Window is empty; as an
// outage, Scenario.Validate refuses it ("provider.outages[i].to_seconds:
// must be after from_seconds").
type Window struct{ From, To time.Duration }

// ClientSpec configures the strategies that are not the governor. Rate and
// Burst are the configured (guessed) limit per action of the static and
// failsafe-go limiters; MaxRetries, BaseDelay and MaxBackoff bound their
// retries. It is a plain value that several goroutines may read at once
// while none changes it. The zero ClientSpec is refused by
// Scenario.Validate ("client.rate: must be > 0").
type ClientSpec struct {
	Rate       float64
	Burst      float64
	MaxRetries int
	BaseDelay  time.Duration
	MaxBackoff time.Duration
	// BreakerThreshold and BreakerDelay configure failsafe-go's breaker.
	BreakerThreshold int
	BreakerDelay     time.Duration
}

// limitOf returns the limit of an action at the start of a run.
func (p *ProviderSpec) limitOf(action string) Limit {
	l := Limit{Rate: p.Rate, Burst: p.Burst}
	if o, ok := p.Per[action]; ok {
		if o.Rate > 0 {
			l.Rate = o.Rate
		}
		if o.Burst > 0 {
			l.Burst = o.Burst
		}
	}
	return l
}

// tenantDraw is the tenant of a ProviderSpec in one run: its walk's levels,
// drawn from the run's seed as they are needed. It is not safe for
// concurrent use; the zero value (no tenant) takes nothing.
type tenantDraw struct {
	t      *Tenant
	seed   uint64
	levels []float64
}

// tenantFor returns the tenant of a run with seed.
func (p *ProviderSpec) tenantFor(seed uint64) *tenantDraw {
	return &tenantDraw{t: p.Tenant, seed: seed}
}

// uses reports whether the tenant draws from action's bucket at all.
func (d *tenantDraw) uses(action string) bool {
	tn := d.t
	if tn == nil {
		return false
	}
	if tn.Action == "" && len(tn.Actions) == 0 {
		return true
	}
	return tn.Action == action || slices.Contains(tn.Actions, action)
}

// level returns the walk's level at t (1 without a walk).
func (d *tenantDraw) level(t time.Duration) float64 {
	w := d.t.Walk
	if w == nil || w.Every <= 0 {
		return 1
	}
	k := int(max(0, t-d.t.From) / w.Every)
	for len(d.levels) <= k {
		if len(d.levels) == 0 {
			d.levels = append(d.levels, math.Min(1, math.Max(0, w.Start)))
			continue
		}
		// A draw of its own stream: keyed by the step, apart from the
		// requests' draws (keyed by call and attempt).
		u := newDraw(d.seed, uint64(len(d.levels)), 0x7e_4a47_0000).float()
		x := d.levels[len(d.levels)-1] + w.Step*(2*u-1)
		if x < 0 {
			x = -x
		}
		if x > 1 {
			x = 2 - x
		}
		d.levels = append(d.levels, math.Min(1, math.Max(0, x)))
	}
	return d.levels[k]
}

// rate returns what the tenant takes at t from the bucket of action, whose
// limit is limit then.
func (d *tenantDraw) rate(action string, limit float64, t time.Duration) float64 {
	tn := d.t
	if tn == nil || !d.uses(action) || t < tn.From || (tn.Until > 0 && t >= tn.Until) {
		return 0
	}
	r := tn.Rate
	if tn.Share > 0 {
		r = tn.Share * limit
	}
	return r * d.level(t)
}

// next returns the first time after at, and before until, at which the
// tenant's draw may change: the edges of its window and its walk's steps.
func (d *tenantDraw) next(at, until time.Duration) time.Duration {
	tn := d.t
	if tn == nil {
		return until
	}
	for _, edge := range []time.Duration{tn.From, tn.Until} {
		if edge > at && edge < until {
			until = edge
		}
	}
	if w := tn.Walk; w != nil && w.Every > 0 && at >= tn.From {
		if edge := tn.From + ((at-tn.From)/w.Every+1)*w.Every; edge < until {
			until = edge
		}
	}
	return until
}

// paused returns the end of the pause of action under way at t, if any,
// for a client whose first request of action was at first.
func (p *ProviderSpec) paused(action string, t, first time.Duration) (time.Duration, bool) {
	for _, w := range p.Pauses {
		from, to := w.From, w.To
		if w.AtFirst {
			from, to = from+first, to+first
		}
		if w.Action == action && t >= from && t < to {
			return to, true
		}
	}
	return 0, false
}

// dead reports whether action is throttled for good.
func (p *ProviderSpec) dead(action string) bool { return slices.Contains(p.Dead, action) }

// inOutage reports whether t falls in an outage window.
func (p *ProviderSpec) inOutage(t time.Duration) bool {
	for _, w := range p.Outages {
		if t >= w.From && t < w.To {
			return true
		}
	}
	return false
}

// changesFor returns the changes that apply to action, in time order.
func (p *ProviderSpec) changesFor(action string) []Change {
	var out []Change
	for _, c := range p.Changes {
		if c.Action == "" || c.Action == action {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// Scope returns the governor scope of an action: in an estate scenario
// the action is a scope's key (EstateKey), else an operation of the
// provider's account, region and service.
func (s *Scenario) Scope(action string) resilience.Scope {
	if sp, ok := scopeOfKey(action); ok {
		return sp
	}
	return resilience.Scope{
		Provider:  "aws",
		Account:   s.Provider.Account,
		Region:    s.Provider.Region,
		Service:   s.Provider.Service,
		Operation: action,
	}
}

// workPer returns the calls of each action: the estate's, or the
// workload's calls spread round-robin over its actions.
func (s *Scenario) workPer() map[string]int {
	if s.Estate != nil {
		return s.Estate.workPer()
	}
	w := &s.Workload
	out := map[string]int{}
	for _, a := range w.Actions {
		out[a] = 0 // its bucket counts in the capacity, calls or not
	}
	for i := 0; i < w.Calls; i++ {
		out[w.Actions[i%len(w.Actions)]]++
	}
	return out
}

// fluid runs the provider's buckets against a client that takes every
// token the moment it exists (the initial burst first, then the refill net
// of the second tenant, nothing during outages and an action's pauses) and
// repeats the admitted requests that fail transiently. It returns the time
// at which that client has finished the workload (the slowest action sets
// it; an action that is throttled for good is left out, its calls lost
// whatever the client), and, for a time at, the successful calls it could
// have made by then. Each action's own work bounds it from below, so the
// ideal is a lower bound whatever else holds the work back (an estate's
// detail calls wait for their listing's page). The time limit cuts a run,
// not the ideal: an action whose work takes longer sets it past the limit,
// up to idealBeyond past it (an action that never refills again). With
// ideal false, fluid runs the buckets until at only (capacity); worked is
// the calls of that capacity the workload has, each action's capacity
// counted up to its own work.
func (s *Scenario) fluid(at time.Duration, ideal bool) (makespan time.Duration, capacity, worked float64) {
	const step = 10 * time.Millisecond
	limit := s.TimeLimit
	if limit <= 0 {
		limit = time.Hour
	}
	horizon := at
	if ideal {
		horizon = limit + idealBeyond
	}
	useful := 1 - s.Provider.TransientRate
	perAction := s.workPer()
	for _, action := range slices.Sorted(maps.Keys(perAction)) {
		work := perAction[action]
		if s.Provider.dead(action) {
			continue
		}
		tenant := s.Provider.tenantFor(s.Seed)
		l := s.Provider.limitOf(action)
		changes := s.Provider.changesFor(action)
		tokens, rate, burst := l.Burst, l.Rate, l.Burst
		// pending is the refill of a step the client drained the bucket
		// in: it took each token as it came, so the burst does not cap
		// it (a refill of 1,000 rps serves 1,000 calls a second through
		// a bucket of one token), and it counts at the step's end.
		var served, servedAt, pending float64
		done, seen := time.Duration(-1), false
		for t := time.Duration(0); t <= horizon && (ideal && done < 0 || !ideal && !seen); t += step {
			for len(changes) > 0 && changes[0].At <= t {
				rate = changes[0].Rate
				if changes[0].Burst > 0 {
					burst = changes[0].Burst
					tokens = math.Min(tokens, burst)
				}
				changes = changes[1:]
			}
			served += pending * useful
			pending = 0
			_, paused := s.Provider.paused(action, t, 0)
			drained := !paused && !s.Provider.inOutage(t)
			if drained {
				served += tokens * useful
				tokens = 0
			}
			if done < 0 && served >= float64(work)-1e-9 {
				done = t
			}
			if !seen && t+step > at {
				servedAt, seen = served, true
			}
			net := math.Max(0, rate-tenant.rate(action, rate, t))
			if drained {
				pending = net * step.Seconds()
			} else {
				tokens = math.Min(burst, tokens+net*step.Seconds())
			}
		}
		if done < 0 {
			done = horizon
		}
		makespan = max(makespan, done)
		capacity += servedAt
		worked += math.Min(float64(work), servedAt)
	}
	return makespan, capacity, worked
}

// idealBeyond is how far past the time limit fluid looks for the end of
// an action's work.
const idealBeyond = 24 * time.Hour

// IdealMakespan is the shortest time in which any client could finish the
// workload (see fluid), whether or not it is within the time limit.
func (s *Scenario) IdealMakespan() time.Duration {
	ideal, _, _ := s.fluid(0, true)
	return ideal
}

// Capacity is how many calls the provider could have served successfully
// in the first d of a run: its initial burst plus its refill net of the
// second tenant, outside outages, less the transient failures.
func (s *Scenario) Capacity(d time.Duration) float64 {
	_, c, _ := s.fluid(d, false)
	return c
}

// TrueRate is the provider's refill net of the tenant, summed over the
// actions of the workload, at t (an action paused then, or throttled for
// good, adds nothing).
func (s *Scenario) TrueRate(t time.Duration) float64 {
	var sum float64
	tenant := s.Provider.tenantFor(s.Seed)
	for i, a := range s.Workload.Actions {
		if slices.Contains(s.Workload.Actions[:i], a) {
			continue // one bucket, however often the workload names it
		}
		if _, paused := s.Provider.paused(a, t, 0); paused || s.Provider.dead(a) {
			continue
		}
		sum += s.Provider.netRate(tenant, a, t)
	}
	return sum
}

// netRate returns the refill of action's bucket at t, after its changes,
// net of what the second tenant (drawn by tenant) takes then; outages,
// pauses and a dead operation aside.
func (p *ProviderSpec) netRate(tenant *tenantDraw, action string, t time.Duration) float64 {
	r := p.limitOf(action).Rate
	for _, c := range p.changesFor(action) {
		if c.At <= t {
			r = c.Rate
		}
	}
	return math.Max(0, r-tenant.rate(action, r, t))
}

// Validate reports the first setting that cannot work, naming its key.
func (s *Scenario) Validate() error {
	w := s.Workload
	switch {
	case w.Workers <= 0:
		return &Error{Path: "workload.workers", Msg: "must be > 0"}
	case w.Calls <= 0:
		return &Error{Path: "workload.calls", Msg: "must be > 0"}
	case len(w.Actions) == 0:
		return &Error{Path: "workload.actions", Msg: "must name at least one action"}
	}
	for i, a := range w.Actions {
		if a == "" {
			return &Error{Path: fmt.Sprintf("workload.actions[%d]", i), Msg: "must not be empty"}
		}
	}
	p := s.Provider
	if p.Service == "" {
		return &Error{Path: "provider.service", Msg: "must not be empty"}
	}
	if !(p.Rate > 0) {
		return &Error{Path: "provider.rate", Msg: "must be > 0"}
	}
	if !(p.Burst >= 1) {
		return &Error{Path: "provider.burst", Msg: "must be >= 1"}
	}
	if p.TransientRate < 0 || p.TransientRate >= 1 {
		return &Error{Path: "provider.transient_error_rate", Msg: "must be in [0, 1)"}
	}
	if p.LatencyMedian <= 0 || p.LatencyP99 < p.LatencyMedian {
		return &Error{Path: "provider.latency", Msg: "needs 0 < median_ms <= p99_ms"}
	}
	for _, a := range slices.Sorted(maps.Keys(p.Per)) {
		// 0 leaves the burst at provider.burst; under one token, the
		// bucket could never serve a request.
		if b := p.Per[a].Burst; b != 0 && !(b >= 1) {
			return &Error{Path: "provider.actions." + a + ".burst", Msg: "must be >= 1"}
		}
	}
	for i, c := range p.Changes {
		if !(c.Rate > 0) {
			return &Error{Path: fmt.Sprintf("provider.changes[%d].rate", i), Msg: "must be > 0"}
		}
		if c.Burst != 0 && !(c.Burst >= 1) {
			return &Error{Path: fmt.Sprintf("provider.changes[%d].burst", i), Msg: "must be >= 1"}
		}
	}
	for i, o := range p.Outages {
		if o.To <= o.From {
			return &Error{Path: fmt.Sprintf("provider.outages[%d].to_seconds", i), Msg: "must be after from_seconds"}
		}
	}
	if t := p.Tenant; t != nil {
		if !(t.Rate > 0) && !(t.Share > 0) {
			return &Error{Path: "provider.tenant.rate", Msg: "must be > 0"}
		}
		if t.Share > 1 {
			return &Error{Path: "provider.tenant.share", Msg: "must be <= 1"}
		}
		if t.Share > 0 && t.Rate > 0 {
			return &Error{Path: "provider.tenant.share", Msg: "give rate or share, not both"}
		}
		if t.Until > 0 && t.Until <= t.From {
			return &Error{Path: "provider.tenant.until_seconds", Msg: "must be after from_seconds"}
		}
		if w := t.Walk; w != nil {
			switch {
			case w.Every <= 0:
				return &Error{Path: "provider.tenant.walk.every_seconds", Msg: "must be > 0"}
			case w.Step > 1:
				return &Error{Path: "provider.tenant.walk.step", Msg: "must be in [0, 1]"}
			case w.Start > 1:
				return &Error{Path: "provider.tenant.walk.start", Msg: "must be in [0, 1]"}
			}
		}
	}
	for i, w := range p.Pauses {
		if w.Action == "" {
			return &Error{Path: fmt.Sprintf("provider.pauses[%d].action", i), Msg: "must name an action"}
		}
		if w.To <= w.From {
			return &Error{Path: fmt.Sprintf("provider.pauses[%d].to_seconds", i), Msg: "must be after from_seconds"}
		}
	}
	if err := s.validateActions(); err != nil {
		return err
	}
	if !(s.Client.Rate > 0) {
		return &Error{Path: "client.rate", Msg: "must be > 0"}
	}
	if s.Client.Rate < minClientRate {
		// failsafe's limiter takes the interval between two requests as
		// a Duration, which a slower rate overflows.
		return &Error{Path: "client.rate", Msg: fmt.Sprintf("must be >= %g", minClientRate)}
	}
	if !(s.Client.Burst >= 1) {
		return &Error{Path: "client.burst", Msg: "must be >= 1"}
	}
	if s.Client.Burst > math.MaxInt32 {
		// static's x/time/rate limiter takes its burst as an int.
		return &Error{Path: "client.burst", Msg: fmt.Sprintf("must be at most %d", math.MaxInt32)}
	}
	if s.Client.BreakerThreshold < 1 && s.Estate == nil && slices.Contains(s.StrategyList(), Failsafe) {
		// failsafe-go's breaker counts failures up to the threshold: at
		// 0 it opens on none, and rejects calls the provider would serve.
		return &Error{Path: "client.breaker_threshold", Msg: "must be >= 1 (failsafe's breaker would open on no failure)"}
	}
	names := slices.Concat(StrategyNames, ReferenceNames)
	if s.Estate != nil {
		names = EstateStrategyNames
	}
	for i, name := range s.Strategies {
		if !slices.Contains(names, name) {
			return &Error{Path: fmt.Sprintf("strategies[%d]", i),
				Msg: fmt.Sprintf("unknown strategy %q (%s)", name, strings.Join(names, ", "))}
		}
		if slices.Contains(s.Strategies[:i], name) {
			return &Error{Path: fmt.Sprintf("strategies[%d]", i), Msg: fmt.Sprintf("%q is named twice", name)}
		}
	}
	return nil
}

// minClientRate is the slowest client.rate: one request in some 32 years,
// an interval between requests that a Duration still holds.
const minClientRate = 1e-9

// validateActions reports the first action the provider's settings name
// that the workload does not call: its limit, change, tenant, pause or
// death would have no effect.
func (s *Scenario) validateActions() error {
	known := s.Workload.Actions
	check := func(path, action string) error {
		if action == "" || slices.Contains(known, action) {
			return nil
		}
		msg := fmt.Sprintf("%q is no action of the workload", action)
		if len(known) <= 8 {
			msg += " (" + strings.Join(known, ", ") + ")"
		}
		return &Error{Path: path, Msg: msg}
	}
	p := &s.Provider
	for _, a := range slices.Sorted(maps.Keys(p.Per)) {
		if err := check("provider.actions."+a, a); err != nil {
			return err
		}
	}
	for i, c := range p.Changes {
		if err := check(fmt.Sprintf("provider.changes[%d].action", i), c.Action); err != nil {
			return err
		}
	}
	if t := p.Tenant; t != nil {
		if err := check("provider.tenant.action", t.Action); err != nil {
			return err
		}
		for i, a := range t.Actions {
			if err := check(fmt.Sprintf("provider.tenant.actions[%d]", i), a); err != nil {
				return err
			}
		}
	}
	for i, w := range p.Pauses {
		if err := check(fmt.Sprintf("provider.pauses[%d].action", i), w.Action); err != nil {
			return err
		}
	}
	for i, a := range p.Dead {
		if err := check(fmt.Sprintf("provider.dead[%d]", i), a); err != nil {
			return err
		}
	}
	return nil
}

// Error is a problem with a scenario at a key path: Path names the key
// (provider.changes[0].at_seconds, or (document) for the whole file), Msg
// says what is wrong, and Error() returns "<Path>: <Msg>". It is the type of
// the governor's configuration errors too (resilience.ParseConfig's, whose
// paths start with ratelimit.), so that one errors.As finds the key path of
// any error Parse returns. Nothing changes an Error once returned: several
// goroutines may read one at once. The zero Error, of no path and no
// message, reads ": ".
type Error = yamlconf.Error
