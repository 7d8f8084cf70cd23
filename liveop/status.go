package liveop

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Check returns what a new Run of req would get now, changing nothing:
// nil when it would start or join an operation, or the *RefusedError it
// would get (a busy one even with req.Wait, and when the free slots it
// needs are kept for a caller that waits for them), as a Run outside any
// operation's function would.
func (g *Guard) Check(req Request) error {
	scopes := slices.Clone(req.Scopes)
	slices.Sort(scopes)
	scopes = slices.Compact(scopes)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.flights[req.Key] != nil {
		return nil
	}
	from := g
	if !g.ready {
		// The zero Guard, not used yet, holds nothing and has the
		// settings of a zero Config, which Check reads without giving
		// them to g: a read changes nothing (Run and MarkCompleted do
		// give them, through init).
		from = &Guard{cfg: Config{}.settings(), ready: true}
	}
	if r := from.refusal(time.Now(), scopes, req, &nesting{known: true}); r != nil {
		return r
	}
	return nil
}

// CooldownRemaining returns how long scope still cools down; zero when it
// does not.
func (g *Guard) CooldownRemaining(scope string) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return max(g.cooling[scope].Sub(time.Now()), 0)
}

// MarkCompleted starts the cooldown of scopes as if an operation on them
// had just ended: for a collection done out of band. A caller waiting for
// a slot (Request.Wait) of one of them, without Bypass, is refused at
// once with the cooldown, as a new Run of its request is, and the slots
// it kept go to the callers after it.
func (g *Guard) MarkCompleted(scopes ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	now := time.Now()
	g.coolDown(now, scopes)
	g.handOff(now) // a waiting caller the cooldown now refuses is told
}

// Reset ends the cooldown of scope.
func (g *Guard) Reset(scope string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.cooling, scope)
}

// ResetAll ends every cooldown and forgets every caller's starts. Running
// operations keep their slots.
func (g *Guard) ResetAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.cooling)
	clear(g.starts)
}

// Status is where a Guard stands: a copy, which the Guard does not change
// after Status returned it. It marshals to JSON with snake_case names,
// times in seconds rounded to 0.1 (a cooldown's time left rounded up). An
// idle Guard that never ran an operation has a Status of zeros and empty
// (non-nil) InFlight, ActiveScopes and Cooling, which marshal as [] and {}
// rather than null; the Scopes of an Operation without scopes is empty
// and non-nil too. Nothing else holds a Status's maps and slices, so its
// receiver may read it from several goroutines at once, as long as none
// changes it meanwhile.
type Status struct {
	// InFlight are the operations whose function has not returned,
	// oldest first.
	InFlight []Operation `json:"in_flight"`
	// Active is the number of slots held in all; ActiveScopes, per scope.
	Active       int            `json:"active"`
	ActiveScopes map[string]int `json:"active_scopes"`
	// Cooling maps each cooling scope to its seconds left, rounded up to
	// 0.1.
	Cooling map[string]float64 `json:"cooling"`
	// Started and Joined count the operations started and the calls that
	// joined one, over the Guard's life.
	Started int64 `json:"started"`
	Joined  int64 `json:"joined"`
}

// Operation is a running operation in a Status, a copy like the Status:
// it may be read from several goroutines at once, as long as none changes
// it meanwhile. The zero Operation reads as one of no key and no scopes,
// just started, that no caller waits for.
type Operation struct {
	Key    string   `json:"key,omitempty"`
	Scopes []string `json:"scopes"`
	// Callers is the number of callers waiting for its result: 0 once it
	// timed out or every caller has gone.
	Callers int `json:"callers"`
	// RunningSeconds is its age.
	RunningSeconds float64 `json:"running_seconds"`
}

// Status returns where the Guard stands now.
func (g *Guard) Status() Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	st := Status{
		InFlight:     make([]Operation, 0, len(g.running)),
		Active:       g.total,
		ActiveScopes: make(map[string]int, len(g.active)),
		Cooling:      map[string]float64{},
		Started:      g.started,
		Joined:       g.joined,
	}
	running := make([]*flight, 0, len(g.running))
	for f := range g.running {
		running = append(running, f)
	}
	sort.Slice(running, func(i, j int) bool {
		if !running[i].start.Equal(running[j].start) {
			return running[i].start.Before(running[j].start)
		}
		return running[i].key < running[j].key
	})
	for _, f := range running {
		// Scopes non-nil: an operation without scopes marshals [], as the
		// Status's own collections do.
		op := Operation{Key: f.key, Scopes: append([]string{}, f.scopes...), RunningSeconds: tenths(now.Sub(f.start))}
		if f.phase == phaseRunning {
			op.Callers = f.waiters
		}
		st.InFlight = append(st.InFlight, op)
	}
	for s, n := range g.active {
		st.ActiveScopes[s] = n
	}
	for s, until := range g.cooling {
		if left := until.Sub(now); left > 0 {
			st.Cooling[s] = tenthsUp(left)
		}
	}
	return st
}

// tenths returns d in seconds rounded to 0.1.
func tenths(d time.Duration) float64 { return math.Round(d.Seconds()*10) / 10 }

// tenthsUp returns d in seconds rounded up to 0.1: a time to wait, which
// read back is never shorter than d (a retry at 89.7 s of a refusal with
// 89.73 s left would be refused again), and is 0.1 at the least when d is
// not 0.
func tenthsUp(d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	// To the microsecond first (1.2 s is not 1.3), which leaves less than
	// half a microsecond at 0: 0.1 all the same.
	return max(math.Ceil(math.Round(d.Seconds()*1e6)/1e5)/10, 0.1)
}
