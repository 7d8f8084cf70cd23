package sim

import (
	"context"
	"sync"
	"time"
)

// Oracle is a reference, not a client anyone could deploy: it knows each
// action's limit at every instant (the provider's rate and burst after
// their changes, net of the second tenant's share), keeps a copy of the
// provider's bucket from it, and sends a request the moment that copy
// holds a token, with the retries of Static. It knows no outage, pause or
// dead operation. What it reaches is what following the limit perfectly
// gives, so a figure that it cannot reach either is decided by something
// else than following the limit.
//
// Its requests take their tokens in order when they reach the head of
// their action's queue, from the bucket as it is then: a rise of the limit
// speeds up the requests already waiting. A limiter of reservations
// (x/time/rate's) would keep them on reservations made at the rate of the
// time they queued, seconds old with 64 workers waiting.
const Oracle = "oracle"

// oracleStep bounds one wait of Oracle's queue, so that a waiter sees a
// change of the limit within it.
const oracleStep = 10 * time.Millisecond

// oracleSlack is how much more than one token Oracle's copy of a bucket
// holds before it sends: the copy counts its refill at other instants
// than the provider, and so rounds differently, and a request on which
// the two counts tie would be refused. A bucket whose burst is under one
// token and the slack sends once full instead: neither count holds more
// than the burst, and the provider admits a request on a full one.
const oracleSlack = 1e-6

func newOracleStrategy(sc *Scenario, clock Clock) *staticStrategy {
	o := &oracle{clock: clock, p: &sc.Provider, start: clock.Now(), tenant: sc.Provider.tenantFor(sc.Seed), queue: map[string]*oracleQueue{}}
	for _, a := range sc.Workload.Actions {
		if o.queue[a] == nil {
			o.queue[a] = &oracleQueue{turn: make(chan struct{}, 1), b: sc.Provider.newBucket(a, 0)}
		}
	}
	return &staticStrategy{clock: clock, c: sc.Client, rng: newLockedRand(sc.Seed, 3), pace: o}
}

// oracle paces Oracle with a copy of each action's bucket at the provider.
type oracle struct {
	clock Clock
	p     *ProviderSpec
	start time.Time
	queue map[string]*oracleQueue

	mu     sync.Mutex  // guards tenant and every oracleQueue's b
	tenant *tenantDraw // draws its walk as it goes
}

// oracleQueue is one action's queue: turn admits one request at a time, in
// the order they came.
type oracleQueue struct {
	turn chan struct{}
	b    *pbucket
}

func (o *oracle) wait(ctx context.Context, action string) error {
	q := o.queue[action]
	select {
	case q.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-q.turn }()
	for {
		t := o.clock.Now().Sub(o.start)
		o.mu.Lock()
		q.b.advance(o.tenant, action, t)
		if q.b.tokens >= min(1+oracleSlack, q.b.burst) {
			q.b.tokens--
			o.mu.Unlock()
			return nil
		}
		d := min(oracleStep, q.b.untilToken(o.tenant, action, t)+time.Microsecond)
		o.mu.Unlock()
		if err := o.clock.Sleep(ctx, d); err != nil {
			return err
		}
	}
}

// rate returns the limits summed over the actions.
func (o *oracle) rate() float64 {
	t := o.clock.Now().Sub(o.start)
	o.mu.Lock()
	defer o.mu.Unlock()
	var sum float64
	for a := range o.queue {
		sum += o.p.netRate(o.tenant, a, t)
	}
	return sum
}
