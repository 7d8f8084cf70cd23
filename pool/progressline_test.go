package pool

import "testing"

// Progress's line counts its scopes in the singular when there is one:
// "(1 scope waiting, 0 open)", not "(1 scopes waiting, 0 open)", which a
// scan's progress printed for minutes while one dead scope held its queue.
func TestProgressLineCountsOneScopeInTheSingular(t *testing.T) {
	for _, tc := range []struct {
		states []ScopeState
		want   string
	}{
		{[]ScopeState{ScopeWaiting}, "done 0/1, running 0, queued 1 (1 scope waiting, 0 open), ETA 0s"},
		{[]ScopeState{ScopeOpen}, "done 0/1, running 0, queued 1 (0 scopes waiting, 1 open), ETA 0s"},
		{[]ScopeState{ScopeWaiting, ScopeNoSlot}, "done 0/2, running 0, queued 2 (2 scopes waiting, 0 open), ETA 0s"},
	} {
		pr := Progress{Queued: len(tc.states)}
		for _, st := range tc.states {
			pr.Scopes = append(pr.Scopes, ScopeProgress{Queued: 1, State: st})
		}
		if got := pr.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
