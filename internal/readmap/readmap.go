// Package readmap is a map for the call path: lookups of present keys are
// one atomic load and a map read, without a lock, so that goroutines
// calling the same scopes do not contend on a lock's cache line. Writes
// take a mutex. It is sync.Map's read/dirty design with typed keys (a
// struct key put in an interface would allocate on every lookup).
//
// Nothing in this module uses it any more. It stays because modules
// cloudgaws and cloudgazure v0.1.0 import it: a user's build may pair them
// with a later release of this module, and they must still compile.
//
// Deprecated: use package cowmap.
package readmap

import (
	"sync"
	"sync/atomic"
)

// Map is a read-mostly map. It is safe for concurrent use; the zero value
// is an empty map.
type Map[K comparable, V any] struct {
	read atomic.Pointer[map[K]V] // immutable snapshot; may lag dirty

	mu     sync.Mutex
	dirty  map[K]V // every key, when not nil; else read is complete
	misses int     // lookups that fell through to dirty since the last promotion
}

// Load returns the value of k.
func (m *Map[K, V]) Load(k K) (V, bool) {
	if r := m.read.Load(); r != nil {
		if v, ok := (*r)[k]; ok {
			return v, true
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.LoadLocked(k)
}

// LoadOrCreate returns the value of k, storing make() first when k is
// absent. make runs with the lock held, at most once per call.
func (m *Map[K, V]) LoadOrCreate(k K, make func() V) V {
	if v, ok := m.Load(k); ok {
		return v
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.LoadLocked(k); ok {
		return v
	}
	v := make()
	m.StoreLocked(k, v)
	return v
}

// LoadLocked looks k up with the lock held, promoting the write copy to
// the read copy once enough lookups have missed the read copy.
func (m *Map[K, V]) LoadLocked(k K) (V, bool) {
	if m.dirty == nil {
		if r := m.read.Load(); r != nil {
			v, ok := (*r)[k]
			return v, ok
		}
		var zero V
		return zero, false
	}
	v, ok := m.dirty[k]
	if m.misses++; m.misses >= len(m.dirty) {
		d := m.dirty
		m.read.Store(&d)
		m.dirty, m.misses = nil, 0
	}
	return v, ok
}

// Lock takes the write lock, which the *Locked methods need.
func (m *Map[K, V]) Lock() { m.mu.Lock() }

// Unlock releases the write lock.
func (m *Map[K, V]) Unlock() { m.mu.Unlock() }

// ensureDirty makes dirty a complete, writable copy. mu must be held.
func (m *Map[K, V]) ensureDirty() {
	if m.dirty != nil {
		return
	}
	var n int
	r := m.read.Load()
	if r != nil {
		n = len(*r)
	}
	m.dirty = make(map[K]V, n+1)
	if r != nil {
		for k, v := range *r {
			m.dirty[k] = v
		}
	}
}

// StoreLocked sets k. The lock must be held.
func (m *Map[K, V]) StoreLocked(k K, v V) {
	m.ensureDirty()
	m.dirty[k] = v
}

// DeleteLocked removes k. The lock must be held.
func (m *Map[K, V]) DeleteLocked(k K) {
	m.ensureDirty()
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
// may call DeleteLocked (deleting from a map being ranged over is safe in
// Go, and a first delete swaps in a write copy, leaving the ranged map
// untouched).
func (m *Map[K, V]) RangeLocked(f func(K, V)) {
	src := m.dirty
	if src == nil {
		if r := m.read.Load(); r != nil {
			src = *r
		}
	}
	for k, v := range src {
		f(k, v)
	}
}

// Snapshot copies the map.
func (m *Map[K, V]) Snapshot() map[K]V {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[K]V, m.LenLocked())
	m.RangeLocked(func(k K, v V) { out[k] = v })
	return out
}

// Reset empties the map.
func (m *Map[K, V]) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.read.Store(nil)
	m.dirty, m.misses = nil, 0
}
