package liveop

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"
)

// Guard admits live operations under the rules of the package
// documentation. It is safe for concurrent use. The zero Guard is ready to
// use with the settings of a zero Config (cooldown 120 s, one operation
// per scope, two in all, no caller quota, no timeout).
type Guard struct {
	mu      sync.Mutex
	cfg     settings
	ready   bool
	flights map[string]*flight     // joinable operations, by key
	running map[*flight]struct{}   // every operation whose function has not returned
	active  map[string]int         // slots held, per scope
	total   int                    // slots held in all
	cooling map[string]time.Time   // scope -> end of its cooldown
	starts  map[string][]time.Time // caller -> starts inside the window, oldest first
	started int64
	joined  int64
	queue   []*waiter      // the callers waiting for a slot, in the order they came
	held    map[string]int // slots kept for waiting callers a slot was handed to, per scope (see Guard.handOff)
	heldAll int            // slots kept for them in all
	kept    map[string]int // slots kept for waiting callers still waiting for another of their scopes, per scope (see Guard.handOff)
	steps   int            // the steps Guard.endable has taken, in all: what a test counts of its work
}

// Request describes one live operation. The zero Request has no key (it
// joins nothing), no scopes (only the total cap applies to it) and the
// caller "". Of a Request that joins a running operation only the Key
// counts: the operation keeps the scopes and the timeout of the Request
// that started it. Run and Check only read a Request (they sort a copy of
// its Scopes), so one Request may be given to them from several
// goroutines at once, as long as none changes it meanwhile.
type Request struct {
	// Key makes operations with the same key one (see Key); "" never
	// joins.
	Key string
	// Scopes are the scopes the operation touches: "aws/123456789012",
	// "azure/<subscription>", "gcp/projects/p", or a bare "aws". They are
	// compared as strings.
	Scopes []string
	// Caller is who asks, for the quota. Every request without a caller
	// shares the quota of the caller "".
	Caller string
	// Bypass skips the cooldown, for operators.
	Bypass bool
	// Wait waits for a slot, within the context, instead of a busy
	// refusal, unless only the operation the caller runs inside (or one
	// that waits for it) could free it (see ErrNested). Waiting callers
	// get slots in the order they came: a freed slot goes to the first
	// of them it lets start, and no caller that came later takes it; a
	// caller still waiting for one of its scopes keeps the free slots of
	// the others, except from a Run inside an operation's function (on
	// its goroutine, or with its context: see the package
	// documentation). A waiting caller is refused as soon as a rule
	// before the caps refuses it: its caller's quota, filled meanwhile,
	// or a cooldown of one of its scopes (unless Bypass), started when
	// an operation on it ended or by MarkCompleted.
	Wait bool
	// Timeout bounds the operation: 0 takes the guard's operation
	// timeout; a negative Timeout means none.
	Timeout time.Duration
}

// New returns a Guard with the settings of cfg, or an error naming every
// invalid setting of cfg (Config.Validate's).
func New(cfg Config) (*Guard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Guard{cfg: cfg.settings(), ready: true}
	g.init()
	return g, nil
}

// init makes the maps; g.mu is held (or g is not shared yet).
func (g *Guard) init() {
	if g.flights != nil {
		return
	}
	if !g.ready {
		g.cfg, g.ready = Config{}.settings(), true
	}
	g.flights = map[string]*flight{}
	g.running = map[*flight]struct{}{}
	g.active = map[string]int{}
	g.cooling = map[string]time.Time{}
	g.starts = map[string][]time.Time{}
	g.held = map[string]int{}
	g.kept = map[string]int{}
}

// flight is one running operation.
type flight struct {
	guard   *Guard          // the guard that started it
	awaits  map[*flight]int // the operations Runs made inside this one's function wait for, and how many Runs; g.mu
	key     string
	scopes  []string
	start   time.Time
	timeout time.Duration
	phase   phase         // written by Guard.to only
	waiters int           // callers waiting for the result, while the operation runs
	done    chan struct{} // closed when the result is set: on leaving phaseRunning, but for phaseAbandoned
	val     any
	err     error
	own     bool // val and err are what its function returned: not a panic's, nor the timeout refusal
	cancel  context.CancelCauseFunc
}

// await records that a Run made inside f's function waits for the
// operation o (f nil: none); g.mu is held. Guard.await undoes it.
func (f *flight) await(o *flight) {
	if f == nil {
		return
	}
	if f.awaits == nil {
		f.awaits = map[*flight]int{}
	}
	f.awaits[o]++
}

// endable returns the running operations that can still end, as far as
// the Guard can tell: every operation but those whose function waits,
// through Runs made with its context, for one that cannot. An operation
// cannot end while a Run of its function waits for an operation that
// cannot (flight.awaits), or waits for a slot (a waiting caller with
// that context, Guard.queue) of a scope, or of the total, whose slots
// are all held by operations that cannot. An operation timed out or
// abandoned can end: its context is cancelled, which ends those Runs.
// The slots kept for waiting callers count as free, as they are once
// those callers' operations end. It counts one more Run of the function
// of the operation p (p nil: none), one that would wait for the
// operation join, or, join nil, for a slot of scopes: p is not among
// the operations it returns when that Run would wait for its own
// result. g.mu is held.
func (g *Guard) endable(p, join *flight, scopes []string) map[*flight]bool {
	// A worklist from the operations that can end at once: each running
	// operation counts the conditions it waits for that are not met yet
	// (pending), each an operation's end or a free slot of a scope or of
	// the total, and is found to end when the last is met. A slot frees
	// when the operations not known to end hold fewer than the cap, which
	// happens once, as they are found to end one by one. Each operation,
	// each of its waits and each scope of a waiting caller is walked a
	// bounded number of times: the time is linear in the running
	// operations, their Runs' waits and the waiting callers' scopes.
	total := len(g.running)
	steps := 0 // each operation, wait, scope and link walked: added to g.steps
	// The operations waiting for one condition are a list, its links in
	// links: a list is the index+1 of its last link, 0 when empty.
	type link struct {
		f    *flight
		prev int // the list before this link
	}
	var (
		held    map[string]int  // slots held per scope by the operations not known to end, once a slot of a scope is waited for
		pending map[*flight]int // operation -> its conditions not met yet
		links   []link
		onEnd   map[*flight]int // operation -> the operations waiting for its end
		onScope map[string]int  // scope -> the operations waiting for a slot of it
		onTotal int             // the operations waiting for a slot of the total
	)
	wants := func(f *flight, list int) int {
		if pending == nil {
			pending, links = map[*flight]int{}, make([]link, 0, len(g.running))
		}
		pending[f]++
		links = append(links, link{f, list})
		return len(links)
	}
	waitEnd := func(f, o *flight) {
		if _, running := g.running[o]; running {
			if onEnd == nil {
				onEnd = map[*flight]int{}
			}
			onEnd[o] = wants(f, onEnd[o])
		}
	}
	waitSlot := func(f *flight, scopes []string) {
		if total >= g.cfg.maxTotal {
			onTotal = wants(f, onTotal)
		}
		if len(scopes) > 0 && held == nil {
			held, onScope = map[string]int{}, map[string]int{}
			for o := range g.running {
				for _, s := range o.scopes {
					steps++
					held[s]++
				}
			}
		}
		for _, s := range scopes {
			steps++
			if held[s] >= g.cfg.maxPerScope {
				onScope[s] = wants(f, onScope[s])
			}
		}
	}
	for f := range g.running {
		steps++
		if f.phase != phaseRunning {
			continue // cancelled: it can end
		}
		for o := range f.awaits {
			steps++
			waitEnd(f, o)
		}
		if f == p {
			if join != nil {
				waitEnd(f, join)
			} else {
				waitSlot(f, scopes)
			}
		}
	}
	for _, w := range g.queue {
		steps++
		if _, running := g.running[w.inside]; running && w.inside.phase == phaseRunning && w.phase == waitAsleep {
			waitSlot(w.inside, w.scopes)
		}
	}
	ends := make(map[*flight]bool, len(g.running))
	ready := make([]*flight, 0, len(g.running))
	for f := range g.running {
		if pending[f] == 0 {
			ready = append(ready, f)
		}
	}
	met := func(list int) {
		for ; list != 0; list = links[list-1].prev {
			steps++
			f := links[list-1].f
			if pending[f]--; pending[f] == 0 {
				ready = append(ready, f)
			}
		}
	}
	for len(ready) > 0 {
		f := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		steps++
		ends[f] = true
		met(onEnd[f])
		if total--; total == g.cfg.maxTotal-1 {
			met(onTotal)
		}
		if onScope != nil {
			for _, s := range f.scopes {
				steps++
				if held[s]--; held[s] == g.cfg.maxPerScope-1 {
					met(onScope[s])
				}
			}
		}
	}
	g.steps += steps
	return ends
}

// stuck reports whether a Run made with the context of the function of
// the running operation p (nil: none) would leave p unable to end,
// waiting for the operation join or, join nil, for a slot of scopes (see
// Guard.endable); g.mu is held.
func (g *Guard) stuck(p, join *flight, scopes []string) bool {
	if _, running := g.running[p]; !running {
		return false // none, or its function has returned
	}
	return !g.endable(p, join, scopes)[p]
}

// operationKey is the key of the *flight a function's context carries:
// the operation it runs.
type operationKey struct{}

// Run runs fn as the live operation req describes, or joins the identical
// operation already running, and returns its result. Refusals are
// *RefusedError values; a caller whose ctx ends while it waits gets ctx's
// error (a busy refusal wrapping it, while waiting for a slot). fn runs on
// its own goroutine with a context that keeps ctx's values but not its
// cancellation (see the package documentation for when it is cancelled),
// and must return a value of the same type for every caller of a key: a
// caller of another type that joins it gets an error matching
// ErrResultType (and the operation's error, if it returned one). A
// Run with the context fn was given, or one derived from it, for the key
// of fn's own operation (or of one that waits for it) returns an error
// matching ErrNested rather than wait for its own result. A nil fn gets
// ErrNilFunc, and nothing starts. A panic of a method of ctx, the
// caller's code, goes on up to the caller, which has gone then as if ctx
// had ended: it keeps no slot and counts as no caller of the operation.
func Run[T any](ctx context.Context, g *Guard, req Request, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	if fn == nil {
		return zero, ErrNilFunc
	}
	inside, _ := ctx.Value(operationKey{}).(*flight) // asked outside the lock: a Context is the caller's code
	if inside != nil && inside.guard != g {
		inside = nil // an operation of another guard, whose lock guards it
	}
	// A Run on an operation function's goroutine whose context does not
	// say so (a helper's own) is inside that operation all the same.
	nested := nesting{known: inside != nil, inside: inside != nil}
	f, inside, err := g.admit(ctx, inside, &nested, req, func(ctx context.Context) (any, error) { return fn(ctx) })
	if err != nil {
		return zero, err
	}
	val, err, own := g.await(ctx, inside, f)
	if val == nil {
		if own && reflect.TypeFor[T]().Kind() != reflect.Interface {
			// The function, of an interface type, returned a nil value,
			// which is no value of T (an int, a *T: v.(T) fails on it).
			return zero, &resultTypeError{key: req.Key, want: reflect.TypeFor[T](), err: err}
		}
		return zero, err
	}
	v, ok := val.(T)
	if !ok {
		return zero, &resultTypeError{key: req.Key, got: reflect.TypeOf(val), want: reflect.TypeFor[T](), err: err}
	}
	return v, err
}

// admit joins req's operation, starts it, or refuses it, waiting for a
// slot with req.Wait; inside is the operation whose function's context
// ctx is (nil: none), which then waits for the one admitted, and nested
// says whether the caller runs inside an operation's function, inside's
// or one whose goroutine it runs on. An operation whose function has
// returned as the caller comes waits for nothing: inside is then nil,
// and nested is looked up on the stack when it matters. admit returns
// the operation admitted and inside.
func (g *Guard) admit(ctx context.Context, inside *flight, nested *nesting, req Request, fn func(context.Context) (any, error)) (_, _ *flight, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	scopes := slices.Clone(req.Scopes)
	slices.Sort(scopes)
	scopes = slices.Compact(scopes)
	var w *waiter // the caller's place in the queue, once it waits
	for {
		g.mu.Lock()
		g.init()
		now := time.Now()
		was := g.unhold(w) // a slot handed to the caller is its own to take below
		if _, running := g.running[inside]; inside != nil && !running {
			// A context that outlived its operation's function (see
			// Guard.stuck), or whose operation's function returned while
			// the caller waited (see Guard.finish): the Run is inside
			// that operation no more, and inside another only if it runs
			// on its goroutine, which is looked up when it matters.
			inside, *nested = nil, nesting{}
			if w != nil {
				g.outlive(w)
			}
		}
		if f := g.flights[req.Key]; f != nil {
			g.dequeue(w, now)
			if g.stuck(inside, f, nil) {
				g.mu.Unlock()
				return nil, nil, fmt.Errorf("%w %q: it would wait for its own result", ErrNested, req.Key)
			}
			g.join(f)
			inside.await(f)
			g.mu.Unlock()
			return f, inside, nil
		}
		refused := g.refusal(now, scopes, req, nested)
		if nested.unknown() {
			// The answer hangs on whether the caller runs inside an
			// operation's function: looked up with the lock let go, and
			// the state looked at again. The slots handed to a waiting
			// caller, or kept for it, stay so meanwhile, so that no
			// caller that comes later takes them.
			g.rehold(w, was)
			g.mu.Unlock()
			nested.resolve()
			continue
		}
		if refused == nil {
			// Off the queue with no hand-off: the slots kept for it are
			// the ones it takes, and start hands on the rest once they
			// are taken.
			g.unqueue(w)
			f := g.start(ctx, now, scopes, req, fn)
			inside.await(f)
			g.mu.Unlock()
			return f, inside, nil
		}
		if refused.Reason != ReasonBusy || !req.Wait {
			g.dequeue(w, now)
			g.mu.Unlock()
			return nil, nil, refused
		}
		if stuck, holding := g.waitsForItself(inside, scopes); stuck {
			g.dequeue(w, now)
			g.mu.Unlock()
			return nil, nil, selfWaitError(refused, holding)
		}
		if !nested.known {
			// Known before it waits, as handOff asks on another
			// goroutine: looked up with the lock let go, and the state
			// looked at again, the slots kept for a waiting caller
			// kept meanwhile.
			g.rehold(w, was)
			g.mu.Unlock()
			nested.resolve()
			continue
		}
		if w == nil {
			w = g.enqueue(req, scopes, inside)
		}
		ready := g.sleep(w, *nested)
		g.handOff(now) // a slot it let go of goes to the next
		g.mu.Unlock()
		if err := g.wait(ctx, w, ready); err != nil {
			refused.cause = err
			return nil, nil, refused
		}
	}
}

// wait waits, with g.mu not held, until the waiting caller w is woken
// (ready) or ctx ends, and returns ctx's error, when the caller has gone
// (off the queue then). The context bounds the wait even when a slot was
// handed to the caller at the same moment (select chooses at random): a
// caller that has gone starts nothing, and the slot goes to the next. A
// panic of ctx's Done or Err, the caller's code, takes the caller off the
// queue too as it goes on up, so that no slot stays kept for it.
func (g *Guard) wait(ctx context.Context, w *waiter, ready <-chan struct{}) (err error) {
	gone := true
	defer func() {
		if gone {
			g.mu.Lock()
			g.dequeue(w, time.Now())
			g.mu.Unlock()
		}
	}()
	select {
	case <-ready:
	case <-ctx.Done():
	}
	err = ctx.Err()
	gone = err != nil
	return err
}

// handOff wakes the callers waiting for a slot that may go on now, in the
// order they came: one an operation of its key can be joined by, one a
// rule other than the caps now refuses, and one the caps let start, for
// which it keeps the slots (Guard.held), so that no caller that comes or
// looks later takes them, and the callers after it find the caps as if it
// had started, until it takes them or can no longer use them (an
// operation of its key started, or a rule before the caps now refuses it:
// see Guard.recheck), when they go on at once. A caller the caps still
// hold back keeps the free slots of its scopes (Guard.kept), so that a
// caller that comes later for one of them does not take a slot the first
// needs, and the first starts when
// its other scopes free (a Run inside an operation's function, which the
// first may be waiting for, is not held back by those: see
// Guard.firstBroken). A caller woken before, to join or to be refused,
// that has not looked again yet keeps its place all the same: the
// operation it was to join may have ended meanwhile. g.mu is held.
func (g *Guard) handOff(now time.Time) {
	for _, w := range g.queue {
		if w.phase == waitHanded {
			// Woken, it looks again and takes what was handed to it,
			// unless it can no longer use it: it lets go of it at once,
			// for the callers after it.
			g.recheck(now, w)
			continue
		}
		// Looked at afresh, after the callers before it; a caller already
		// woken (to join, or to be refused) that has not looked again yet
		// is still in its place, and is handed the slots it now needs.
		g.unkeep(w)
		if g.flights[w.req.Key] == nil {
			r := g.firstBroken(now, w.scopes, w.req, &w.nested)
			if r != nil && r.Reason == ReasonBusy {
				g.keep(w)
				continue
			}
			if r == nil {
				g.hold(w)
			}
		}
		g.wake(w) // a caller handed its slots is awake already
	}
}

// recheck frees the slots handed to the waiting caller w, woken to take
// them but not yet looking again, when it can no longer use them: an
// operation of its key can be joined now, or a rule before the caps (its
// caller's quota, a cooldown of one of its scopes) now refuses it, which
// it finds when it looks again. Otherwise they stay kept for it. g.mu is
// held.
func (g *Guard) recheck(now time.Time, w *waiter) {
	was := g.unhold(w)
	if g.flights[w.req.Key] != nil {
		return
	}
	if r := g.firstBroken(now, w.scopes, w.req, &w.nested); r == nil || r.Reason == ReasonBusy {
		g.rehold(w, was)
	}
}

// dequeue takes the caller w (nil: none) off the queue, as it stops
// waiting, and hands the slots kept for it to the next; g.mu is held.
func (g *Guard) dequeue(w *waiter, now time.Time) {
	if w == nil {
		return
	}
	g.unqueue(w)
	g.handOff(now)
}

// waitsForItself reports whether the slot a new operation on scopes waits
// for can free only when an operation that waits for the caller ends, so
// that the caller would wait for itself: inside, whose function's context
// the caller has, or one that waits for inside however indirectly (one
// whose function's Run for it has not returned, such as the one that
// started it, or one whose function joined it, or waits for a slot only
// such operations hold) holds the slot (see Guard.endable); g.mu is held.
// An operation whose Run for inside has returned (at a deadline of its
// own, or cancelled at its timeout) waits for it no more. When it does,
// it returns too the scopes whose every slot such operations hold (none:
// the total's).
func (g *Guard) waitsForItself(inside *flight, scopes []string) (stuck bool, holding []string) {
	if _, running := g.running[inside]; !running {
		return false, nil // none, or its function has returned
	}
	ends := g.endable(inside, nil, scopes)
	if ends[inside] {
		return false, nil
	}
	for _, s := range scopes {
		n := 0
		for f := range g.running {
			if !ends[f] && slices.Contains(f.scopes, s) {
				n++
			}
		}
		if n >= g.cfg.maxPerScope {
			holding = append(holding, s)
		}
	}
	return true, holding
}

// refusal applies the quota, the cooldown (unless bypassed) and the caps,
// in that order, to a new operation, of a Run inside an operation's
// function when nested; g.mu is held. It changes nothing of the Guard's;
// when nested is not known and the answer hangs on it, the refusal is no
// answer (nesting.unknown), and the caller asks again once it is known.
func (g *Guard) refusal(now time.Time, scopes []string, req Request, nested *nesting) *RefusedError {
	r := g.firstBroken(now, scopes, req, nested)
	if r != nil {
		r.Caller = req.Caller
	}
	return r
}

// firstBroken returns the refusal of the first rule req breaks, without its
// caller. The slots kept for waiting callers count as held, except, for a
// Run inside an operation's function (nested), those kept for callers
// still waiting for another of their scopes (Guard.kept): such a caller
// may be waiting for that very operation, which waits for the Run. It
// asks nested only where such a slot counts, and walks no stack (see
// nesting.is).
func (g *Guard) firstBroken(now time.Time, scopes []string, req Request, nested *nesting) *RefusedError {
	if max := g.cfg.callerMax; max > 0 {
		if in := g.inWindow(now, req.Caller); len(in) >= max {
			return quotaError(req.Caller, max, g.cfg.callerWindowLabel, in[0].Add(g.cfg.callerWindow).Sub(now))
		}
	}
	if !req.Bypass {
		var cooling []string
		var longest time.Duration
		for _, s := range scopes {
			if left := g.cooling[s].Sub(now); left > 0 {
				cooling = append(cooling, s)
				longest = max(longest, left)
			}
		}
		if len(cooling) > 0 {
			return cooldownError(cooling, longest)
		}
	}
	var full, waiting []string // waiting: those full of slots kept for waiting callers, not of operations that run
	for _, s := range scopes {
		n := g.active[s] + g.held[s]
		if g.kept[s] > 0 && !nested.is() {
			n += g.kept[s]
		}
		if n >= g.cfg.maxPerScope {
			full = append(full, s)
			if g.active[s] < g.cfg.maxPerScope {
				waiting = append(waiting, s)
			}
		}
	}
	if len(full) > 0 || g.total >= g.cfg.maxTotal {
		return busyError(full, waiting)
	}
	if g.total+g.heldAll >= g.cfg.maxTotal {
		return busyWaitingError()
	}
	return nil
}

// inWindow returns the caller's starts inside the quota window, oldest
// first; g.mu is held.
func (g *Guard) inWindow(now time.Time, caller string) []time.Time {
	starts := g.starts[caller]
	cut := now.Add(-g.cfg.callerWindow)
	i := 0
	for i < len(starts) && !starts[i].After(cut) {
		i++
	}
	return starts[i:]
}

// start takes the operation's slots and quota entry and starts fn; g.mu is
// held.
func (g *Guard) start(ctx context.Context, now time.Time, scopes []string, req Request, fn func(context.Context) (any, error)) *flight {
	g.sweep(now)
	timeout := req.Timeout
	if timeout == 0 {
		timeout = g.cfg.operationTimeout
	}
	f := &flight{guard: g, key: req.Key, scopes: scopes, start: now, timeout: max(timeout, 0), waiters: 1, done: make(chan struct{})}
	for _, s := range scopes {
		g.active[s]++
	}
	g.total++
	if g.cfg.callerMax > 0 {
		g.starts[req.Caller] = append(g.inWindow(now, req.Caller), now)
	}
	g.started++
	if req.Key != "" {
		g.flights[req.Key] = f
	}
	g.running[f] = struct{}{}
	g.handOff(now) // callers waiting with its key join it

	opCtx, cancel := context.WithCancelCause(context.WithValue(context.WithoutCancel(ctx), operationKey{}, f))
	f.cancel = cancel
	stop := func() {}
	if f.timeout > 0 {
		var cancelTimeout context.CancelFunc
		opCtx, cancelTimeout = context.WithTimeout(opCtx, f.timeout)
		stopAfter := context.AfterFunc(opCtx, func() { g.expire(f, opCtx) })
		stop = func() { stopAfter(); cancelTimeout() }
	}
	go g.run(opCtx, f, fn, stop)
	return f
}

// run calls fn and ends the operation however fn ends.
func (g *Guard) run(ctx context.Context, f *flight, fn func(context.Context) (any, error), stop func()) {
	var (
		val      any
		err      error
		returned bool
	)
	defer func() {
		if !returned {
			r := recover()
			if r == nil { // runtime.Goexit: a panic's value is never nil (runtime.PanicNilError)
				r = ErrGoexit
			}
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
		own := returned
		if f.timeout > 0 && context.Cause(ctx) == context.DeadlineExceeded {
			// fn returned on its timeout, maybe before expire ran: the
			// callers get the timeout refusal all the same.
			val, err, own = nil, timeoutError(slices.Clone(f.scopes), f.timeout, context.DeadlineExceeded), false
		}
		stop()
		g.finish(f, val, err, own)
		f.cancel(context.Canceled)
	}()
	val, err = callOperation(ctx, fn)
	returned = true
}

// callOperation calls an operation's function, fn, on the operation's
// goroutine: its frame, below every frame of fn's, tells a Run made by fn
// with a context of its own that it is inside an operation's function
// (onOperationGoroutine).
//
//go:noinline
func callOperation(ctx context.Context, fn func(context.Context) (any, error)) (any, error) {
	return fn(ctx)
}

// operationFrame is the name of callOperation's frame.
var operationFrame = runtime.FuncForPC(reflect.ValueOf(callOperation).Pointer()).Name()

// nesting is whether a Run is inside an operation's function, looked up
// on the stack (onOperationGoroutine) only when it matters: when a slot
// kept for a waiting caller would hold the Run back, or the Run waits.
// The Guard's lock is let go for the lookup (see Guard.admit), which
// costs microseconds and allocates.
type nesting struct {
	known, inside bool
	wanted        bool // is was asked before the answer was known
}

// is reports whether the Run is inside an operation's function, as far as
// that is known: it walks no stack, as its caller holds the Guard's lock.
// Not known yet, it reports false and notes that the answer was wanted
// (unknown), which the caller then looks up (resolve) with the lock let
// go, before it asks again.
func (n *nesting) is() bool {
	if !n.known {
		n.wanted = true
	}
	return n.inside
}

// unknown reports whether is was asked while the answer was not known:
// what it reported then is no answer.
func (n *nesting) unknown() bool { return n.wanted && !n.known }

// resolve looks the answer up, if it is not known: it walks the stack,
// on the Run's goroutine, with no lock held.
func (n *nesting) resolve() {
	if !n.known {
		n.known, n.inside = true, operationGoroutine()
	}
}

// operationGoroutine is onOperationGoroutine, which a test counts.
var operationGoroutine = onOperationGoroutine

// onOperationGoroutine reports whether its caller runs on the goroutine
// of an operation's function (of any Guard), below callOperation's
// frame. A goroutine the function started is not one.
func onOperationGoroutine() bool {
	pcs := make([]uintptr, 64)
	for {
		n := runtime.Callers(2, pcs)
		if n == len(pcs) {
			pcs = make([]uintptr, 2*len(pcs))
			continue // deeper than that: read it whole
		}
		frames := runtime.CallersFrames(pcs[:n])
		for {
			f, more := frames.Next()
			if f.Function == operationFrame {
				return true
			}
			if !more {
				return false
			}
		}
	}
}

// The verbs of an operation's life: join, finish, expire and leave. Each
// starts from the operation's phase and moves it only through Guard.to.

// join adds a caller to the running operation f; g.mu is held.
func (g *Guard) join(f *flight) {
	if checkPhases && f.phase != phaseRunning {
		panic(fmt.Sprintf("liveop: joined an operation %v", f.phase))
	}
	f.waiters++
	g.joined++
}

// finish ends the operation f, whose function returned val and err (own),
// or panicked (err its *PanicError), or ran past its timeout (err the
// timeout refusal): it frees the operation's slots,
// starts its scopes' cooldown and gives its callers the result, unless its
// timeout already did or every caller has gone.
func (g *Guard) finish(f *flight, val any, err error, own bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var failed bool
	switch f.phase {
	case phaseRunning:
		failed = err != nil
		f.own = own
		f.deliver(val, err)
	case phaseTimedOut, phaseAbandoned:
		// Nobody is left to get the result: the operation failed,
		// whatever its function returned.
		failed = true
	}
	g.to(f, phaseEnded) // from phaseEnded, a function that returned twice: panics under cloudgdebug
	delete(g.running, f)
	for _, s := range f.scopes {
		if g.active[s]--; g.active[s] <= 0 {
			delete(g.active, s)
		}
	}
	g.total--
	for _, w := range g.queue {
		if w.inside == f {
			// Its Run is inside f no more: it looks again (woken).
			g.outlive(w)
			g.wake(w)
		}
	}
	now := time.Now()
	if !failed || g.cfg.coolAfterFailure {
		g.coolDown(now, f.scopes)
	}
	g.handOff(now)
}

// expire ends the callers' wait when the operation's context is done: at
// its timeout, with a timeout refusal. When every caller has gone (the
// other way the context ends) there is nobody left to tell.
func (g *Guard) expire(f *flight, ctx context.Context) {
	if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.timeOut(f)
}

// timeOut gives the callers of the running operation f the timeout
// refusal; g.mu is held. An operation that has ended, or that every
// caller has left, has nobody left to tell.
func (g *Guard) timeOut(f *flight) {
	if f.phase != phaseRunning {
		return
	}
	f.deliver(nil, timeoutError(slices.Clone(f.scopes), f.timeout, context.DeadlineExceeded))
	g.to(f, phaseTimedOut)
}

// deliver sets the result of the running operation f and wakes its
// callers; g.mu is held. The caller moves f out of phaseRunning.
func (f *flight) deliver(val any, err error) {
	f.val, f.err = val, err
	close(f.done)
}

// await waits for the operation's result or for ctx; the last caller to go
// cancels the operation. own reports whether the result is what the
// operation's function returned (flight.own). inside is the operation whose function made the
// Run (nil: none), which waits for f no more once await returns. A panic
// of ctx's Done, the caller's code, takes the caller off f as it goes on
// up, as the end of ctx does.
func (g *Guard) await(ctx context.Context, inside, f *flight) (_ any, _ error, own bool) {
	if inside != nil {
		defer func() {
			g.mu.Lock()
			if inside.awaits[f]--; inside.awaits[f] <= 0 {
				delete(inside.awaits, f)
			}
			g.mu.Unlock()
		}()
	}
	waited := false
	defer func() {
		if !waited {
			g.depart(f)
		}
	}()
	select {
	case <-f.done:
		waited = true
		return f.val, f.err, f.own
	case <-ctx.Done():
	}
	waited = true
	if g.depart(f) {
		return f.val, f.err, f.own
	}
	return nil, ctx.Err(), false
}

// depart takes a caller that has gone off the operation f (Guard.leave),
// and cancels f when the caller was its last; it reports whether f's
// result was set meanwhile (the caller takes it). g.mu is not held.
func (g *Guard) depart(f *flight) (delivered bool) {
	g.mu.Lock()
	delivered, abandoned := g.leave(f)
	g.mu.Unlock()
	if abandoned {
		f.cancel(ErrAbandoned)
	}
	return delivered
}

// leave takes a caller whose context ended off the operation f; g.mu is
// held. It reports whether f's result was set meanwhile (the caller takes
// it), and whether the caller was the last, so that f is abandoned (and
// is to be cancelled, outside the lock).
func (g *Guard) leave(f *flight) (delivered, abandoned bool) {
	switch f.phase {
	case phaseRunning:
		f.waiters--
		if f.waiters == 0 {
			g.to(f, phaseAbandoned)
			return false, true
		}
		return false, false
	case phaseAbandoned:
		// Only its last caller leaves it so, once.
		if checkPhases {
			panic("liveop: a caller left an abandoned operation")
		}
		return false, false
	}
	return true, false // timed out or ended: the result is set
}

// coolDown starts the cooldown of scopes; g.mu is held.
func (g *Guard) coolDown(now time.Time, scopes []string) {
	for _, s := range scopes {
		if d := g.cfg.cooldownOf(s); d > 0 {
			g.cooling[s] = now.Add(d)
		}
	}
}

// sweep forgets ended cooldowns and callers without a start in the
// window; g.mu is held.
func (g *Guard) sweep(now time.Time) {
	for s, until := range g.cooling {
		if !until.After(now) {
			delete(g.cooling, s)
		}
	}
	for c := range g.starts {
		if len(g.inWindow(now, c)) == 0 {
			delete(g.starts, c)
		}
	}
}
