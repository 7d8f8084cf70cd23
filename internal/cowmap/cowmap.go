// Package cowmap is a copy-on-write map for small maps that are read on
// the call path and rarely written: a lookup is one atomic load and a map
// read, without a lock, and every write copies the map and publishes the
// copy, so that a lookup made after a write returns sees it. A write costs
// the whole map, so it suits maps of a few hundred or thousand keys that
// stop growing (cloudgaws's service names, cloudgazure's lower-cased
// names), not maps that grow with the calls.
package cowmap

import (
	"maps"
	"sync"
	"sync/atomic"
)

// Map is a copy-on-write map. It is safe for concurrent use; the zero
// value is an empty map.
type Map[K comparable, V any] struct {
	m  atomic.Pointer[map[K]V] // never written once published; nil: empty
	mu sync.Mutex              // serialises writers
}

// Load returns the value of k.
func (m *Map[K, V]) Load(k K) (V, bool) {
	if p := m.m.Load(); p != nil {
		v, ok := (*p)[k]
		return v, ok
	}
	var zero V
	return zero, false
}

// Len returns the number of keys.
func (m *Map[K, V]) Len() int {
	if p := m.m.Load(); p != nil {
		return len(*p)
	}
	return 0
}

// LoadOrStore returns the value of k, storing create() first when k is
// absent. create runs with the write lock held, at most once per call, and
// only when k is absent.
func (m *Map[K, V]) LoadOrStore(k K, create func() V) V {
	if v, ok := m.Load(k); ok {
		return v
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.Load(k); ok {
		return v
	}
	v := create()
	m.write(func(c map[K]V) { c[k] = v })
	return v
}

// Store sets k to v.
func (m *Map[K, V]) Store(k K, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.write(func(c map[K]V) { c[k] = v })
}

// Delete removes k.
func (m *Map[K, V]) Delete(k K) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.Load(k); ok {
		m.write(func(c map[K]V) { delete(c, k) })
	}
}

// write publishes a copy of the map changed by f. The write lock is held.
func (m *Map[K, V]) write(f func(map[K]V)) {
	var c map[K]V
	if p := m.m.Load(); p != nil {
		c = maps.Clone(*p)
	} else {
		c = make(map[K]V, 1)
	}
	f(c)
	m.m.Store(&c)
}

// Snapshot returns a copy of the map.
func (m *Map[K, V]) Snapshot() map[K]V {
	if p := m.m.Load(); p != nil {
		return maps.Clone(*p)
	}
	return map[K]V{}
}

// Clear removes every key.
func (m *Map[K, V]) Clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m.Store(nil)
}
