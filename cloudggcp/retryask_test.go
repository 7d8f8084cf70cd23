package cloudggcp

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The retry of a call whose pause before it was slept whole asks the
// scope's breaker before it is sent, as a retry after a cut pause does:
// the breaker may have opened during the pause without cutting it (a
// provider with breaker_wait, a breaker that tells no verdicts, a
// cooldown that ends before the pause, gax's own sleep). The tests run
// each flavour of askFlavours: Do and a listing ask the guard's Admit,
// the Retry option on a client with the interceptor asks through the
// interceptor's Enter, and without it, through the Admit its retryGate
// asks as grpc sends it.

// askFlavours are cutFlavours and the Retry option's call on a client
// without the interceptor, whose pause its gate sleeps (see retryGate):
// its retry asks the guard's Admit just before grpc sends it.
var askFlavours = append(cutFlavours[:len(cutFlavours):len(cutFlavours)], retryAlone)

// retryAlone is the Retry option's call on a client without the
// interceptor.
var retryAlone = cutFlavour{"Retry option alone", "GetFeed", false, retryOptionCall}

// verdictConfig is GCP waiting for its breakers' verdicts (breaker_wait),
// its rate fixed and roomy: the calls that open the breaker do not wait
// for tokens, and a retry that waited for the verdict, which takes one,
// finds one.
func verdictConfig() resilience.Config {
	fixed := false
	return resilience.Config{GCP: resilience.ProviderConfig{BreakerWait: true, Adaptive: &fixed, MaxRPS: 100, Burst: 100}}
}

// For a provider that waits for its breakers' verdicts (breaker_wait),
// the pause is whole (20 s), and the retry, which the breaker opened at
// 1 s (cooldown 60 s) would refuse then, waits for the verdict: it goes
// as the probe at 61 s and succeeds, closing the breaker; nothing lost.
func TestRetryAfterAWholePauseWaitsForTheVerdict(t *testing.T) {
	for _, tc := range askFlavours {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := runPause(t, tc, newFake(5), newGov(t, verdictConfig()))
				reqs := r.srv.reqs(tc.rpc)
				if r.err != nil || len(reqs) != 2 || reqs[1].at.Sub(r.start) != 61*time.Second {
					t.Fatalf("%v, requests at %v; want the retry's success at 61 s, the breaker's verdict", r.err, offsets(reqs, r.start))
				}
				if s := r.gov.Inspect(Scope("projects/p1", tc.rpc)).Breaker.State; s != state.Closed {
					t.Fatalf("the breaker is %v after the probe's success, want closed", s)
				}
				lostOnly(t, r.gov, r.stats, r.ledger, resilience.LossFailed, 0)
			})
		})
	}
}

// silentStore is the in-process store whose breakers tell no verdicts,
// as a fleet's shared breakers do: a pause before a retry is never cut,
// and the breaker is asked when it ends.
type silentStore struct{ state.Store }

func (s silentStore) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	return struct{ state.Breaker }{s.Store.Breaker(key, spec)}
}

// A breaker that tells no verdicts does not cut the pause (20 s), but
// the retry asks it when the pause ends: open (it opened at 1 s, for
// 60 s), it refuses the retry with a *resilience.CircuitOpenError
// wrapping the answer, nothing more is sent, and the call is lost once,
// as failed.
func TestRetryAfterAWholePauseIsRefusedByAnOpenBreaker(t *testing.T) {
	for _, tc := range askFlavours {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gov, err := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(silentStore{resilience.MemoryStore()}))
				if err != nil {
					t.Fatal(err)
				}
				runPause(t, tc, newFake(5), gov).refused(t, tc.rpc, 20*time.Second)
			})
		})
	}
}

// A breaker whose cooldown (5 s) ends before the pause (20 s) leaves the
// pause whole, and the retry asks it when the pause ends: half-open, it
// lets the retry through as its probe (the breaker is half-open, its
// probe out, as the retry arrives), whose success closes it.
func TestRetryAfterAWholePauseGoesAsTheProbe(t *testing.T) {
	for _, tc := range askFlavours {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFake(5)
				gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerCooldownSeconds: 5}})
				var mu sync.Mutex
				var seen []state.BreakerState
				srv.seen = func(rpc string) {
					mu.Lock()
					defer mu.Unlock()
					seen = append(seen, gov.Inspect(Scope("projects/p1", rpc)).Breaker.State)
				}
				r := runPause(t, tc, srv, gov)
				mu.Lock()
				defer mu.Unlock()
				if r.err != nil || r.ended != 20*time.Second || len(seen) != 2 || seen[1] != state.HalfOpen {
					t.Fatalf("%v at %v, the breaker %v as each request arrived; want the retry's success at 20 s, sent as the half-open breaker's probe", r.err, r.ended, seen)
				}
				if s := gov.Inspect(Scope("projects/p1", tc.rpc)).Breaker.State; s != state.Closed {
					t.Fatalf("the breaker is %v after the probe's success, want closed", s)
				}
				lostOnly(t, gov, r.stats, r.ledger, resilience.LossFailed, 0)
			})
		})
	}
}

// A context cancelled while the retry of Do, a listing or the Retry option
// alone waits for the breaker's verdict (breaker_wait) ends the call as
// during the pause: Do and the listing return a *RetryStoppedError with
// the provider's answer and context.Canceled, the Retry option the
// context's error (its status Canceled); the call is lost once, as
// cancelled, and nothing more is sent.
func TestRetryWaitingForTheVerdictEndsWithItsContext(t *testing.T) {
	for _, tc := range askFlavours {
		if tc.interceptor {
			continue // the interceptor's Enter: the core's own wait
		}
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFake(5)
				gov := newGov(t, verdictConfig())
				client := startFlavour(t, tc, srv, gov)
				ctx, stats, ledger := newRun("assets")
				ctx, cancel := context.WithCancel(ctx)
				done := make(chan error)
				go func() { done <- tc.call(ctx, gov, client) }()
				synctest.Wait()
				time.Sleep(time.Second)
				openBreaker(gov, Scope("projects/p1", tc.rpc))
				time.Sleep(29 * time.Second) // the pause over at 20 s, the verdict due at 61 s
				synctest.Wait()
				cancel()
				err := <-done
				var rs *RetryStoppedError
				switch {
				case tc.name == retryAlone.name:
					if !errors.Is(err, context.Canceled) || status.Code(err) != codes.Canceled {
						t.Fatalf("%v; want context.Canceled", err)
					}
				case !errors.As(err, &rs) || !errors.Is(err, context.Canceled) || status.Code(rs.Err) != codes.Internal:
					t.Fatalf("%v; want a RetryStoppedError with the answer and context.Canceled", err)
				}
				if n := len(srv.reqs(tc.rpc)); n != 1 {
					t.Fatalf("%d requests, want 1", n)
				}
				lostOnly(t, gov, stats, ledger, resilience.LossCancelled, 1)
			})
		})
	}
}
