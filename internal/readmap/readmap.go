// Package readmap is a map for the call path: lookups of present keys are
// one atomic load and a map read, without a lock. Every write, under the
// mutex, publishes a new read copy, so that a lookup made after a write
// returns sees it: the read copy never lags (an earlier version promoted
// its write copy only after enough misses, and served stale values of keys
// stored or deleted after a promotion).
//
// Nothing in this module uses it any more. It stays because modules
// cloudgaws and cloudgazure v0.1.0 import it: a user's build may pair them
// with a later release of this module, and they must still compile, and
// be correct.
//
// Deprecated: use package cowmap.
package readmap

import (
	"maps"
	"sync"
	"sync/atomic"
)

// Map is a read-mostly map. It is safe for concurrent use; the zero value
// is an empty map.
type Map[K comparable, V any] struct {
	read atomic.Pointer[map[K]V] // the whole map, never written once published

	mu    sync.Mutex
	dirty map[K]V // under mu: the writes of the current lock, published at Unlock; nil when none
}

// Load returns the value of k.
func (m *Map[K, V]) Load(k K) (V, bool) {
	if r := m.read.Load(); r != nil {
		v, ok := (*r)[k]
		return v, ok
	}
	var zero V
	return zero, false
}

// LoadOrCreate returns the value of k, storing make() first when k is
// absent. make runs with the lock held, at most once per call.
func (m *Map[K, V]) LoadOrCreate(k K, make func() V) V {
	if v, ok := m.Load(k); ok {
		return v
	}
	m.Lock()
	defer m.Unlock()
	if v, ok := m.LoadLocked(k); ok {
		return v
	}
	v := make()
	m.StoreLocked(k, v)
	return v
}

// LoadLocked looks k up with the lock held, seeing the writes made under
// it.
func (m *Map[K, V]) LoadLocked(k K) (V, bool) {
	if m.dirty != nil {
		v, ok := m.dirty[k]
		return v, ok
	}
	return m.Load(k)
}

// Lock takes the write lock, which the *Locked methods need.
func (m *Map[K, V]) Lock() { m.mu.Lock() }

// Unlock publishes the writes made under the lock, and releases it.
func (m *Map[K, V]) Unlock() {
	if m.dirty != nil {
		d := m.dirty
		m.read.Store(&d)
		m.dirty = nil
	}
	m.mu.Unlock()
}

// writable makes dirty a copy of the map to write. mu must be held.
func (m *Map[K, V]) writable() {
	if m.dirty != nil {
		return
	}
	if r := m.read.Load(); r != nil {
		m.dirty = maps.Clone(*r)
	} else {
		m.dirty = map[K]V{}
	}
}

// StoreLocked sets k; readers see it once the lock is released.
func (m *Map[K, V]) StoreLocked(k K, v V) {
	m.writable()
	m.dirty[k] = v
}

// DeleteLocked removes k; readers see it once the lock is released.
func (m *Map[K, V]) DeleteLocked(k K) {
	m.writable()
	delete(m.dirty, k)
}

// LenLocked returns the number of keys. The lock must be held.
func (m *Map[K, V]) LenLocked() int {
	if m.dirty != nil {
		return len(m.dirty)
	}
	if r := m.read.Load(); r != nil {
		return len(*r)
	}
	return 0
}

// RangeLocked calls f for every key and value. The lock must be held; f
// may call DeleteLocked.
func (m *Map[K, V]) RangeLocked(f func(K, V)) {
	src := m.dirty
	if src == nil {
		if r := m.read.Load(); r != nil {
			src = *r
		}
	}
	for k, v := range maps.Clone(src) {
		f(k, v)
	}
}

// Snapshot copies the map.
func (m *Map[K, V]) Snapshot() map[K]V {
	if r := m.read.Load(); r != nil {
		return maps.Clone(*r)
	}
	return map[K]V{}
}

// Reset empties the map.
func (m *Map[K, V]) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.read.Store(nil)
	m.dirty = nil
}
