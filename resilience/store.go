package resilience

import (
	"fmt"
	"time"

	"github.com/cloudg/cloudg/internal/breaker"
	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/internal/budget"
	"github.com/cloudg/cloudg/state"
)

// MemoryStore returns the state.Store that keeps a governor's state in the
// process: the default, and the local fallback of a shared store.
func MemoryStore() state.Store { return memoryStore{} }

// memoryStore keeps everything in this process; its keys are unused.
type memoryStore struct{}

func (memoryStore) Bucket(_ string, s state.BucketSpec, now time.Duration) state.Bucket {
	return bucket.New(s, now)
}

func (memoryStore) Breaker(_ string, s state.BreakerSpec) state.Breaker { return breaker.New(s) }

func (memoryStore) Budget(_ string, size int) state.Budget { return budget.New(size) }

// checkedStore is the Store a governor uses in place of one of the
// user's (WithStateStore): the same state, each bucket, breaker and
// budget returned as the Store made it (with its optional methods), but
// a nil one refused at once, with a panic that names the Store's method
// and the key. A nil state is none the governor can use: kept, a nil
// leaf bucket made every later call of any scope that took the
// reclaimer's step panic on it, for good, and a nil account bucket read
// as none, the account unpaced.
type checkedStore struct{ s state.Store }

// nilState panics, saying that the Store's method returned nil for key.
func nilState(method, key string) {
	panic(fmt.Sprintf("resilience: the state.Store's %s returned nil for %s", method, key))
}

func (c checkedStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	b := c.s.Bucket(key, spec, now)
	if b == nil {
		nilState("Bucket", key)
	}
	return b
}

func (c checkedStore) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	b := c.s.Breaker(key, spec)
	if b == nil {
		nilState("Breaker", key)
	}
	return b
}

func (c checkedStore) Budget(provider string, size int) state.Budget {
	b := c.s.Budget(provider, size)
	if b == nil {
		nilState("Budget", provider)
	}
	return b
}
