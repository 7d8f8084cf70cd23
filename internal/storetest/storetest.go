// Package storetest holds state stores for tests of the governor and its
// integrations.
package storetest

import (
	"time"

	"github.com/cloudg/cloudg/state"
)

// SlowPauses returns a store whose buckets are s's but take d to record a
// throttle or a pause, as a shared store's do (a round trip to Redis, in
// fleet mode): a test of what a call waiting meanwhile sees. Its buckets
// have only the methods of state.Bucket, none of the optional ones of s's.
// It is safe for concurrent use if s is.
func SlowPauses(s state.Store, d time.Duration) state.Store {
	return slowStore{s, d}
}

type slowStore struct {
	state.Store
	d time.Duration
}

func (s slowStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return slowBucket{s.Store.Bucket(key, spec, now), s.d}
}

type slowBucket struct {
	state.Bucket
	d time.Duration
}

func (b slowBucket) Throttle(now, pause time.Duration) (float64, bool) {
	time.Sleep(b.d)
	return b.Bucket.Throttle(now, pause)
}

func (b slowBucket) Pause(now, pause time.Duration) {
	time.Sleep(b.d)
	b.Bucket.Pause(now, pause)
}
