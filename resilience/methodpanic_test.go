//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// panicky is a provider's throttle (the code Throttling, a 429, a
// Retry-After) one of whose methods, named by panics, panics: an
// application's error type, or an SDK's, with a bug in that method
// alone.
type panicky struct{ panics string }

func (e *panicky) boom(method string) {
	if e.panics == method {
		panic("boom in " + method)
	}
}

func (e *panicky) Error() string             { e.boom("Error"); return "Throttling: Rate exceeded" }
func (e *panicky) ErrorCode() string         { e.boom("ErrorCode"); return "Throttling" }
func (e *panicky) ErrorMessage() string      { e.boom("ErrorMessage"); return "Rate exceeded" }
func (e *panicky) HTTPStatusCode() int       { e.boom("HTTPStatusCode"); return 429 }
func (e *panicky) Header() http.Header       { e.boom("Header"); return http.Header{"Retry-After": {"1"}} }
func (e *panicky) RetryAfter() time.Duration { e.boom("RetryAfter"); return time.Second }
func (e *panicky) Timeout() bool             { e.boom("Timeout"); return false }
func (e *panicky) Temporary() bool           { e.boom("Temporary"); return false }
func (e *panicky) ConnectionError() bool     { e.boom("ConnectionError"); return false }
func (e *panicky) Is(error) bool             { e.boom("Is"); return false }
func (e *panicky) As(any) bool               { e.boom("As"); return false }
func (e *panicky) Unwrap() error             { e.boom("Unwrap"); return errors.New("cause") }

// panickyJoin is panicky with the causes of a join (Unwrap() []error).
type panickyJoin struct{ panicky }

func (e *panickyJoin) Unwrap() []error {
	e.boom("Unwrap")
	return []error{errors.New("cause")}
}

// Whichever method of its error panics as the governor reads it, a
// governed call ends as a call does: the panic does not reach the caller
// (it is the error's, not the caller's code, which goes on: see
// TestEndPanickedKeepsThePanicItEnds), the slot goes back (under a cap of
// one, the next call takes it at once), and the call is lost once, in
// the ledger. When the panic makes the error unreadable (a method the
// classifier asks), the ledger's reason says which method of which type
// panicked.
func TestAGovernedCallSurvivesAPanicOfAnyMethodOfItsError(t *testing.T) {
	methods := []struct {
		name  string
		named bool // the ledger's reason names it: the classifier asks it
	}{
		{"Error", true}, {"ErrorCode", true}, {"HTTPStatusCode", true}, {"Header", true},
		{"RetryAfter", true}, {"Timeout", true}, {"ConnectionError", true}, {"Unwrap", true},
		{"ErrorMessage", false}, {"Temporary", false}, {"Is", false}, {"As", false},
	}
	for _, m := range methods {
		for _, join := range []bool{false, true} {
			var err error = &panicky{m.name}
			if join {
				err = &panickyJoin{panicky{m.name}}
			}
			t.Run(fmt.Sprintf("%s/%T", m.name, err), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
					ends := []struct {
						how   string
						end   func(ctx context.Context)
						lists bool // the ledger lists err (not the answer After saw before it)
					}{
						{"Do", func(ctx context.Context) {
							n := 0
							if got := Do(ctx, iamUsers, always(&n, err), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 2})); got != err {
								t.Errorf("Do returned %v, want the function's error", got)
							}
						}, true},
						{"After and End", func(ctx context.Context) {
							gd, _ := g.Begin(ctx, iamUsers)
							if err := gd.Enter(ctx); err != nil {
								t.Fatal(err)
							}
							gd.After(err)
							gd.End(err)
						}, true},
						{"End", func(ctx context.Context) {
							gd, _ := g.Begin(ctx, iamUsers)
							if err := gd.Enter(ctx); err != nil {
								t.Fatal(err)
							}
							gd.End(err)
						}, true},
						{"End of a retry", func(ctx context.Context) {
							// The call gives up on the throttle After saw,
							// which the ledger lists.
							gd := throttledRetry(t, g, ctx, ec2Subnets)
							gd.End(err)
						}, false},
					}
					for _, e := range ends {
						r := newRun(context.Background())
						func() {
							defer func() {
								if p := recover(); p != nil {
									t.Errorf("%s: the error's panic reached the caller: %v", e.how, p)
								}
							}()
							e.end(r.ctx)
						}()
						time.Sleep(time.Minute) // past any pause the throttles set
						gd, _ := g.Begin(context.Background(), ec2Vpcs)
						if err := gd.TryEnter(); err != nil {
							t.Errorf("%s: the next call of the account: %v; want the slot free", e.how, err)
						}
						gd.End(nil)
						if n := r.ledger.Lost(); n != 1 {
							t.Errorf("%s: %d calls lost, want 1 (%q)", e.how, n, r.ledger.Describe())
						}
						want := fmt.Sprintf("a method of %T (%s) panicked", err, m.name)
						if rs := r.ledger.Reasons(); m.named && e.lists && (len(rs) != 1 || !strings.Contains(rs[0], want)) {
							t.Errorf("%s: the ledger's reasons %q; want one that says %q", e.how, rs, want)
						}
					}
				})
			})
		}
	}
}

// A half-open breaker's probe whose call ends with an error a method of
// which panics, unreadable with nothing read before the panic to decide
// it, is a probe that ends with a local error (no verdict, whatever its
// text says; an error whose Unwrap alone panics is read by its own code:
// see TestAnErrorWhoseUnwrapAlonePanicsKeepsWhatItSays): the breaker is left
// as such a probe leaves it, and once the probe's lease runs out the next
// call probes and closes it. The probe is not held for good, nor taken
// for a throttle that reopens the breaker.
func TestAProbeEndingWithAnUnreadableErrorIsALocalErrors(t *testing.T) {
	var want string // the breaker after a probe that ended with a local error
	probeErrs := []struct {
		name string
		err  error
	}{
		{"local", errors.New("local")},
		{"ErrorCode", &panicky{"ErrorCode"}},
		{"HTTPStatusCode", &panicky{"HTTPStatusCode"}},
		{"Header", &panicky{"Header"}},
		{"ErrorCode, joined", &panickyJoin{panicky{"ErrorCode"}}},
	}
	for _, pe := range probeErrs {
		probeErr := pe.err
		t.Run(pe.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				openBreaker(t, g)
				time.Sleep(61 * time.Second) // the cooldown: the next call is the probe
				n := 0
				Do(context.Background(), ec2Subnets, always(&n, probeErr), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
				if n != 1 {
					t.Fatalf("the probe ran %d times, want once", n)
				}
				got := fmt.Sprintf("%+v", g.Inspect(ec2Subnets).Breaker)
				if want == "" {
					want = got
				} else if got != want {
					t.Errorf("the breaker after the probe: %s; want it as a local error leaves it, %s", got, want)
				}
				time.Sleep(2 * time.Minute) // past the probe's lease
				if err := Do(context.Background(), ec2Subnets, always(&n, nil), WithGovernor(g)); err != nil {
					t.Errorf("the call after the probe's lease: %v; want it sent", err)
				}
				if st := g.Inspect(ec2Subnets).Breaker.State.String(); st != "closed" {
					t.Errorf("the breaker is %s after a successful probe, want closed", st)
				}
			})
		})
	}
}
