package test

import (
	"context"
	"errors"
	"net/url"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// admissionRec records what the governor tells a scheduler of a task's
// first call (resilience.WithAdmission).
type admissionRec struct{ deferred atomic.Int32 }

func (a *admissionRec) Decided()                      {}
func (a *admissionRec) Deferred(time.Duration, error) { a.deferred.Add(1) }

// A task's first go-github call that its scheduler's admission defers
// reaches the task through go-github's and net/http's wrapping (the
// *url.Error around the Transport's error) still saying so: errors.Is(err,
// resilience.ErrDeferred), which a task uses to return at once and not
// count the call as failed; the admission is told once. A refusal of
// WithMaxWait, with the same *resilience.WouldWaitError, is a lost call
// and does not match. Nothing is sent after the first call.
func TestADeferredFirstGoGitHubCallSaysErrDeferred(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		adaptive := false
		gov, err := resilience.NewGovernor(resilience.Config{Providers: map[string]resilience.ProviderConfig{
			cloudghttp.ProviderGitHub: {Adaptive: &adaptive, Services: map[string]resilience.ServiceConfig{svcREST: {MaxRPS: 1, Burst: 1}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		c := memClient(t, f, gov)
		if _, _, err := c.Repositories.Get(context.Background(), account, "app"); err != nil { // the only token
			t.Fatal(err)
		}
		var a admissionRec
		_, _, err = c.Repositories.Get(resilience.WithAdmission(context.Background(), &a, 0), account, "app")
		var ww *resilience.WouldWaitError
		var ue *url.Error
		if !errors.As(err, &ue) || !errors.As(err, &ww) || !errors.Is(err, resilience.ErrDeferred) || a.deferred.Load() != 1 {
			t.Errorf("the first call under an admission, no token: %T %v (deferred %d); want a *url.Error for which errors.Is(err, resilience.ErrDeferred)", err, err, a.deferred.Load())
		}
		_, _, err = c.Repositories.Get(resilience.WithMaxWait(context.Background(), 0), account, "app")
		if !errors.As(err, &ww) || errors.Is(err, resilience.ErrDeferred) {
			t.Errorf("a call under WithMaxWait(0), no token: %T %v; want a *resilience.WouldWaitError that is not ErrDeferred", err, err)
		}
		if n := len(f.hitsOf(svcREST)); n != 1 {
			t.Errorf("%d requests sent, want the first alone", n)
		}
	})
}
