//go:build go1.25

package cloudghttp_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// flights counts the calls in flight at once, and the most there were.
type flights struct {
	mu        sync.Mutex
	now, peak int
}

func (f *flights) in() {
	f.mu.Lock()
	f.now++
	f.peak = max(f.peak, f.now)
	f.mu.Unlock()
}

func (f *flights) out() {
	f.mu.Lock()
	f.now--
	f.mu.Unlock()
}

func (f *flights) most() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peak
}

// lendingTokenBase is an authenticating base transport whose first token
// fetch starts a governed call of the API's account with the request's
// context (a refresh it does not wait for, nested in the attempt: it
// borrows the attempt's slot), waits until that call is in, and fails
// with a refused connection to the token endpoint, as oauth2's Transport
// does; the call goes on for 10 s. Every later request is sent with next,
// each counted in flight for a second.
type lendingTokenBase struct {
	gov    *resilience.Governor
	fl     *flights
	next   http.RoundTripper
	mu     sync.Mutex
	asked  int
	nested chan error
}

func (b *lendingTokenBase) RoundTrip(req *http.Request) (*http.Response, error) {
	b.mu.Lock()
	b.asked++
	first := b.asked == 1
	b.mu.Unlock()
	if first {
		in := make(chan struct{})
		ctx := req.Context()
		go func() {
			b.nested <- resilience.Do(ctx, tokenScope, func(context.Context) error {
				b.fl.in()
				close(in)
				time.Sleep(10 * time.Second)
				b.fl.out()
				return nil
			}, resilience.WithGovernor(b.gov))
		}()
		<-in
		return nil, tokenRefused()
	}
	b.fl.in()
	defer b.fl.out()
	time.Sleep(time.Second)
	return b.next.RoundTrip(req)
}

// tokenScope is the scope of a governed call the base transport makes:
// the API's account, so the account's bulkhead.
var tokenScope = resilience.Scope{Provider: apiScope.Provider, Account: apiScope.Account, Service: "tokens"}

// The resend of an attempt that failed before it was sent (its token
// endpoint refused the connection) does not go on the slot its attempt
// lent to a call nested in it that goes on (a token refresh the base
// transport started with the request's context and did not wait for):
// the slot stays that call's until it is over, and the resend waits for
// a slot, so that the account stays within its cap of 1.
func TestAnUnsentAttemptIsNotSentAgainOnASlotLentToACallThatGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		gov := newGov(t, oneSlot())
		fl := &flights{}
		base := &lendingTokenBase{gov: gov, fl: fl, next: newMem(f), nested: make(chan error, 1)}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://api.test/items", nil)
		start := time.Now()
		resp, err := client(base, gov, withAttempts(5)).Do(req)
		if err != nil {
			t.Fatalf("err %v; want the call to succeed once it has its token", err)
		}
		readAll(t, resp)
		if err := <-base.nested; err != nil {
			t.Fatalf("the nested call: %v", err)
		}
		if fl.most() != 1 {
			t.Fatalf("%d calls in flight at once, want 1: the account's cap is 1, and the resend went on the slot lent to the nested call", fl.most())
		}
		if took := time.Since(start); took != 11*time.Second {
			t.Fatalf("the call took %v; want 11s: the resend waits for the nested call's 10s, and takes 1s", took)
		}
		if s := gov.Inspect(apiScope); s.InFlight != 0 || s.Waiting != 0 {
			t.Fatalf("%d in flight, %d waiting after the calls, want none", s.InFlight, s.Waiting)
		}
	})
}

// pathTokenBase fails the first token fetch of each path in fail with a
// refused connection to the token endpoint, and sends every other request
// with next.
type pathTokenBase struct {
	mu     sync.Mutex
	fail   map[string]bool
	failed map[string]bool
	next   http.RoundTripper
}

func (b *pathTokenBase) RoundTrip(req *http.Request) (*http.Response, error) {
	b.mu.Lock()
	fail := b.fail[req.URL.Path] && !b.failed[req.URL.Path]
	if fail {
		b.failed[req.URL.Path] = true
	}
	b.mu.Unlock()
	if fail {
		return nil, tokenRefused()
	}
	return b.next.RoundTrip(req)
}

// everySecond is a policy whose backoff is one second exactly.
var everySecond = cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 5, BaseDelay: time.Second, MaxBackoff: time.Second})

// A request whose token could not be had waits to be sent again without
// a slot, as the core's retries back off without one: another request of
// the account, under a cap of 1, goes meanwhile, at once.
func TestAnUnsentAttemptHoldsNoSlotWhileItWaitsToBeSentAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		gov := newGov(t, oneSlot())
		base := &pathTokenBase{fail: map[string]bool{"/a": true}, failed: map[string]bool{}, next: newMem(f)}
		c := client(base, gov, everySecond)
		var wg sync.WaitGroup
		start := time.Now()
		wg.Go(func() { readAll(t, do(t, c, http.MethodGet, "http://api.test/a", nil)) })
		time.Sleep(100 * time.Millisecond)
		readAll(t, do(t, c, http.MethodGet, "http://api.test/b", nil))
		if took := time.Since(start); took != 100*time.Millisecond {
			t.Errorf("/b answered at %v; want at once, at 100ms: the request waiting to be sent again held the only slot", took)
		}
		wg.Wait()
		hits := f.recorded()
		if len(hits) != 2 || hits[1].path != "/a" || hits[1].at.Sub(start) != time.Second {
			t.Fatalf("the API got %v; want /b, then /a at 1s", hits)
		}
		if s := gov.Inspect(apiScope); s.InFlight != 0 || s.Waiting != 0 {
			t.Fatalf("%d in flight, %d waiting after the calls, want none", s.InFlight, s.Waiting)
		}
	})
}

// A request whose token could not be had, and whose scope's breaker
// opened while it waited to be sent again (another request failed), is
// not sent: the breaker lets no request of the scope through but its
// probe, as it refuses a retry. The call ends with the token's failure,
// a local error of the call, lost as errored, as when its resends are
// spent.
func TestAnUnsentAttemptIsNotSentAgainThroughAnOpenBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(http.StatusInternalServerError))
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerThreshold: 1}})
		base := &pathTokenBase{fail: map[string]bool{"/a": true}, failed: map[string]bool{}, next: newMem(f)}
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "items")
		waitA := getA(t, ctx, base, gov)
		time.Sleep(100 * time.Millisecond)
		readAll(t, do(t, client(base, gov, withAttempts(1)), http.MethodGet, "http://api.test/b", nil))
		if br := gov.Inspect(apiScope).Breaker; br.State != state.Open {
			t.Fatalf("breaker %+v after /b's 500; want open", br)
		}
		errA := waitA()
		if hits := f.recorded(); len(hits) != 1 {
			t.Fatalf("the API got %v; want /b alone: /a was sent again through the open breaker", hits)
		}
		if !errors.Is(errA, syscall.ECONNREFUSED) {
			t.Fatalf("/a: %v; want the token's refused connection", errA)
		}
		if n := ledger.Count(resilience.LossErrored); n != 1 {
			t.Fatalf("ledger %q; want /a lost as errored", ledger.Describe())
		}
		if tot := gov.Summary(stats).Totals; tot.Errored != 1 {
			t.Fatalf("totals %v; want /a errored", tot)
		}
		if s := gov.Inspect(apiScope); s.Breaker.State != state.Open || s.InFlight != 0 {
			t.Fatalf("scope %+v; want the breaker /b opened, no slot held", s)
		}
	})
}

// A request whose token could not be had, and for which no slot comes
// back once it may be sent again (another call of the account holds the
// only one), waits for one as an attempt does: no longer than its
// context's max wait allows, which ends it with the core's
// *resilience.WouldWaitError of ErrNoSlot, recorded as refused, as the
// core records any call its max wait keeps from being sent; and until its
// context ends, which ends it with the context's error, recorded as
// cancelled. Nothing is sent; the call, lost, holds no slot.
func TestAnUnsentAttemptWaitsForASlotWithinItsBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func(context.Context) (context.Context, context.CancelFunc)
		is   error
		loss resilience.Loss
	}{
		{"max wait", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return resilience.WithMaxWait(ctx, 500*time.Millisecond), func() {}
		}, resilience.ErrNoSlot, resilience.LossRefused},
		{"context", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 1500*time.Millisecond)
		}, context.DeadlineExceeded, resilience.LossCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				gov := newGov(t, oneSlot())
				base := &pathTokenBase{fail: map[string]bool{"/a": true}, failed: map[string]bool{}, next: newMem(f)}
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "items")
				ctx, cancel := tc.ctx(ctx)
				defer cancel()
				var errA error
				var wg sync.WaitGroup
				start := time.Now()
				wg.Go(func() {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/a", nil)
					_, errA = client(base, gov, everySecond).Do(req)
				})
				time.Sleep(100 * time.Millisecond) // /a backs off without its slot
				parked, err := gov.Begin(context.Background(), tokenScope)
				if err != nil {
					t.Fatal(err)
				}
				if err := parked.Enter(context.Background()); err != nil {
					t.Fatal(err)
				}
				wg.Wait()
				took := time.Since(start)
				parked.End(nil)
				if !errors.Is(errA, tc.is) {
					t.Fatalf("/a: %v after %v; want %v", errA, took, tc.is)
				}
				if took != 1500*time.Millisecond {
					t.Fatalf("/a ended after %v; want 1.5s: sent again at 1s, waiting for a slot for 0.5s", took)
				}
				if n := len(f.recorded()); n != 0 {
					t.Fatalf("the API got %d requests; want none", n)
				}
				if ledger.Count(tc.loss) != 1 || ledger.Lost() != 1 {
					t.Fatalf("ledger %q; want /a lost as %v", ledger.Describe(), tc.loss)
				}
				if tot := gov.Summary(stats).Totals; tot.Calls != 1 || tot.Retries != 0 {
					t.Fatalf("totals %v; want one call, no retry", tot)
				}
				if s := gov.Inspect(apiScope); s.InFlight != 0 || s.Waiting != 0 {
					t.Fatalf("%d in flight, %d waiting after the calls, want none", s.InFlight, s.Waiting)
				}
			})
		})
	}
}

// pauseAPI pauses the API's scope at once for 60 s, as another request
// does: with a 429 that carries a Retry-After, or with PauseAccount.
func pauseAPI(t *testing.T, gov *resilience.Governor, f *fakeAPI, base http.RoundTripper, how string) {
	t.Helper()
	if how == "PauseAccount" {
		gd, err := gov.Begin(context.Background(), apiScope)
		if err != nil {
			t.Fatal(err)
		}
		gd.PauseAccount(60 * time.Second)
		gd.End(nil)
		return
	}
	f.script(status(http.StatusTooManyRequests, "Retry-After", "60"))
	resp := do(t, client(base, gov, withAttempts(1)), http.MethodGet, "http://api.test/b", nil)
	readAll(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("/b answered %d; want the 429 that pauses the scope", resp.StatusCode)
	}
}

// A request whose token could not be had is sent again no sooner than
// its scope's pause ends: readied while another request's Retry-After or
// a PauseAccount holds the scope (its leaf, or its account bucket), it
// waits out the pause and goes at the scope's rate after it, as every
// caller of a paused scope does; a pause that outlasts the call's
// deadline ends it at once with the deadline's error and the token's,
// recorded as refused, nothing sent. Before, it was sent at 1 s, into
// the pause.
func TestAnUnsentAttemptIsHeldByAPause(t *testing.T) {
	acct := 20.0
	for _, how := range []string{"Retry-After", "PauseAccount"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{AccountMaxRPS: &acct}})
				base := &pathTokenBase{fail: map[string]bool{"/a": true}, failed: map[string]bool{}, next: newMem(f)}
				start := time.Now()
				var wg sync.WaitGroup
				wg.Go(func() { readAll(t, do(t, client(base, gov, everySecond), http.MethodGet, "http://api.test/a", nil)) })
				time.Sleep(100 * time.Millisecond) // /a backs off
				pauseAPI(t, gov, f, base, how)
				wg.Wait()
				var sent time.Duration
				for _, h := range f.recorded() {
					if h.path == "/a" {
						sent = h.at.Sub(start)
					}
				}
				if sent < 60100*time.Millisecond || sent > 61100*time.Millisecond {
					t.Errorf("/a, the scope paused at 100ms for 60s (%s): sent at %v, want within a second after the pause's end", how, sent)
				}

				// The deadline comes before the pause's end.
				f = &fakeAPI{}
				gov = newGov(t, resilience.Config{GCP: resilience.ProviderConfig{AccountMaxRPS: &acct}})
				base = &pathTokenBase{fail: map[string]bool{"/a": true}, failed: map[string]bool{}, next: newMem(f)}
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "items")
				ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				start = time.Now()
				var errA error
				var ended time.Duration
				wg.Go(func() {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/a", nil)
					resp, err := client(base, gov, everySecond).Do(req)
					if err == nil {
						readAll(t, resp)
					}
					errA, ended = err, time.Since(start)
				})
				time.Sleep(100 * time.Millisecond)
				pauseAPI(t, gov, f, base, how)
				wg.Wait()
				if !errors.Is(errA, context.DeadlineExceeded) || !errors.Is(errA, syscall.ECONNREFUSED) || ended != time.Second {
					t.Errorf("/a, the scope paused for 60s (%s) and the deadline 30s away: %v at %v; want the deadline's error and the token's at 1s", how, errA, ended)
				}
				for _, h := range f.recorded() {
					if h.path == "/a" {
						t.Errorf("/a sent at %v; want nothing sent", h.at.Sub(start))
					}
				}
				if ledger.Count(resilience.LossRefused) != 1 || ledger.Lost() != 1 {
					t.Errorf("ledger %q; want /a lost as refused", ledger.Describe())
				}
				if tot := gov.Summary(stats).Totals; tot.Calls != 1 || tot.Refused != 1 {
					t.Errorf("totals %v; want one call, refused", tot)
				}
				if s := gov.Inspect(apiScope); s.InFlight != 0 || s.Waiting != 0 {
					t.Errorf("%d in flight, %d waiting after the calls, want none", s.InFlight, s.Waiting)
				}
			})
		})
	}
}

// A request whose token could not be had, held by its scope's pause, is
// not sent through a breaker that opened during the pause (a request
// sent before it failed at 30 s): the breaker is asked again once the
// pause is over, as for a retry waiting for its token, and the call ends
// with the token's failure, lost as errored. Before, it was sent through
// the open breaker at the pause's end.
func TestAnUnsentAttemptHeldByAPauseIsNotSentThroughABreakerThatOpenedMeanwhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		acct := 20.0
		f := &fakeAPI{}
		f.script(status(http.StatusInternalServerError))
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerThreshold: 1, AccountMaxRPS: &acct}})
		base := &pathTokenBase{fail: map[string]bool{"/a": true}, failed: map[string]bool{},
			next: slowTransport{base: newMem(f), delay: map[string]time.Duration{"/slow": 30 * time.Second}}}
		var wg sync.WaitGroup
		wg.Go(func() {
			readAll(t, do(t, client(base, gov, withAttempts(1)), http.MethodGet, "http://api.test/slow", nil))
		})
		synctest.Wait() // /slow is on the wire
		ctx, ledger := resilience.WithLedger(context.Background(), "items")
		waitA := getA(t, ctx, base, gov)
		time.Sleep(100 * time.Millisecond)
		pauseAPI(t, gov, f, base, "PauseAccount")
		errA := waitA()
		wg.Wait()
		if hits := f.recorded(); len(hits) != 1 {
			t.Fatalf("the API got %v; want /slow alone: /a was sent through the breaker /slow opened during the pause", hits)
		}
		if !errors.Is(errA, syscall.ECONNREFUSED) {
			t.Fatalf("/a: %v; want the token's refused connection", errA)
		}
		if ledger.Count(resilience.LossErrored) != 1 || ledger.Lost() != 1 {
			t.Fatalf("ledger %q; want /a lost as errored", ledger.Describe())
		}
		if s := gov.Inspect(apiScope); s.InFlight != 0 || s.Waiting != 0 {
			t.Fatalf("%d in flight, %d waiting after the calls, want none", s.InFlight, s.Waiting)
		}
	})
}

// With breaker_wait (a provider that waits for its breakers' verdicts),
// a request whose token could not be had, and whose scope's breaker
// opened while it waited to be sent again (another request of the scope
// failed), waits for the breaker's verdict, as the core's retries do,
// within its deadline: once the cooldown is over it is sent as the
// probe, and the call succeeds. Before, the breaker refused it at once,
// and the call was lost as errored with the token's failure.
func TestAnUnsentAttemptWaitsForTheVerdictWithBreakerWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 10}})
		base := &pathTokenBase{fail: map[string]bool{"/a": true}, failed: map[string]bool{}, next: newMem(f)}
		ctx, ledger := resilience.WithLedger(context.Background(), "items")
		start := time.Now()
		waitA := getA(t, ctx, base, gov)
		// Another request of the scope, sent by an SDK of its own, fails
		// at 100ms: the breaker opens for 10 s.
		time.Sleep(100 * time.Millisecond)
		other, err := gov.Begin(context.Background(), apiScope)
		if err != nil {
			t.Fatal(err)
		}
		other.After(syscall.ECONNRESET)
		other.End(syscall.ECONNRESET)
		if br := gov.Inspect(apiScope).Breaker; br.State != state.Open {
			t.Fatalf("breaker %+v after the other request's failure; want open", br)
		}
		errA := waitA()
		if errA != nil {
			t.Fatalf("/a: %v; want it sent once the breaker's cooldown is over, and a success", errA)
		}
		if hits := f.recorded(); len(hits) != 1 || hits[0].path != "/a" || hits[0].at.Sub(start) != 10100*time.Millisecond {
			t.Fatalf("the API got %v; want /a at 10.1s, as the breaker's probe", hits)
		}
		if ledger.Lost() != 0 {
			t.Fatalf("ledger %q; want nothing lost", ledger.Describe())
		}
		if s := gov.Inspect(apiScope); s.Breaker.State != state.Closed || s.InFlight != 0 || s.Waiting != 0 {
			t.Fatalf("scope %+v; want the breaker closed by /a's success, no slot held", s)
		}
	})
}

// getA sends GET /a with ctx through a client of base and gov whose
// policy retries every second, in a goroutine of its own, reading its
// answer; the function it returns waits for it and returns its error.
func getA(t *testing.T, ctx context.Context, base http.RoundTripper, gov *resilience.Governor) func() error {
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/a", nil)
		resp, err := client(base, gov, everySecond).Do(req)
		if err == nil {
			readAll(t, resp)
		}
		done <- err
	}()
	return func() error { return <-done }
}
