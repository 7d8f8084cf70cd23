//go:build go1.25

package cloudghttp_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/resilience"
)

// A task's first request that its scheduler's admission defers reaches the
// task through net/http's own wrapping (the *url.Error an http.Client puts
// around a RoundTripper's error) still saying so: errors.Is(err,
// resilience.ErrDeferred), which a task uses to return at once and not
// count the request as failed; the admission is told once. A refusal of
// WithMaxWait, with the same *resilience.WouldWaitError, is a lost call
// and does not match. Nothing is sent after the first request.
func TestADeferredFirstRequestSaysErrDeferred(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		adaptive := false
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{Adaptive: &adaptive, Services: map[string]resilience.ServiceConfig{
			"items": {MaxRPS: 1, Burst: 1},
		}}})
		c := client(newMem(f), gov)
		get := func(ctx context.Context) error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
			resp, err := c.Do(req)
			if err == nil {
				readAll(t, resp)
			}
			return err
		}
		if err := get(context.Background()); err != nil { // the only token
			t.Fatal(err)
		}
		var a admissionRec
		err := get(resilience.WithAdmission(context.Background(), &a, 0))
		var ww *resilience.WouldWaitError
		var ue *url.Error
		if !errors.As(err, &ue) || !errors.As(err, &ww) || !errors.Is(err, resilience.ErrDeferred) || a.deferred.Load() != 1 {
			t.Errorf("the first request under an admission, no token: %T %v (deferred %d); want a *url.Error for which errors.Is(err, resilience.ErrDeferred)", err, err, a.deferred.Load())
		}
		err = get(resilience.WithMaxWait(context.Background(), 0))
		if !errors.As(err, &ww) || errors.Is(err, resilience.ErrDeferred) {
			t.Errorf("a request under WithMaxWait(0), no token: %T %v; want a *resilience.WouldWaitError that is not ErrDeferred", err, err)
		}
		if n := len(f.recorded()); n != 1 {
			t.Errorf("%d requests sent, want the first alone", n)
		}
	})
}
