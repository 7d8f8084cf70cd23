package resilience

import (
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
