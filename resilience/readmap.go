package resilience

import (
	"sync"
	"sync/atomic"
)

// readMap is a map for the call path: lookups of present keys are a single
// atomic load and a map read, without a lock, so that goroutines calling
// the same scopes do not contend on a lock's cache line. Writes take a
// mutex. It is sync.Map's read/dirty design with typed keys (a Scope put in
// an interface would allocate on every lookup).
//
// The zero value is an empty map.
type readMap[K comparable, V any] struct {
	read atomic.Pointer[map[K]V] // immutable snapshot; may lag dirty

	mu     sync.Mutex
	dirty  map[K]V // every key, when not nil; else read is complete
	misses int     // lookups that fell through to dirty since the last promotion
}

// load returns the value of k.
func (m *readMap[K, V]) load(k K) (V, bool) {
	if r := m.read.Load(); r != nil {
		if v, ok := (*r)[k]; ok {
			return v, true
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.loadLocked(k)
}

// loadLocked looks k up with mu held, promoting dirty to read once enough
// lookups have missed it.
func (m *readMap[K, V]) loadLocked(k K) (V, bool) {
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

// lock takes the write lock; the *Locked methods need it.
func (m *readMap[K, V]) lock()   { m.mu.Lock() }
func (m *readMap[K, V]) unlock() { m.mu.Unlock() }

// ensureDirty makes dirty a complete, writable copy. mu must be held.
func (m *readMap[K, V]) ensureDirty() {
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

// storeLocked sets k. mu must be held.
func (m *readMap[K, V]) storeLocked(k K, v V) {
	m.ensureDirty()
	m.dirty[k] = v
}

// deleteLocked removes k. mu must be held.
func (m *readMap[K, V]) deleteLocked(k K) {
	m.ensureDirty()
	delete(m.dirty, k)
}

// lenLocked returns the number of keys. mu must be held.
func (m *readMap[K, V]) lenLocked() int {
	if m.dirty != nil {
		return len(m.dirty)
	}
	if r := m.read.Load(); r != nil {
		return len(*r)
	}
	return 0
}

// rangeLocked calls f for every key and value. mu must be held; f may call
// deleteLocked (deleting from a map being ranged over is safe in Go; and a
// first delete swaps in a dirty copy, leaving the ranged map untouched).
func (m *readMap[K, V]) rangeLocked(f func(K, V)) {
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

// snapshot copies the map.
func (m *readMap[K, V]) snapshot() map[K]V {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[K]V{}
	m.rangeLocked(func(k K, v V) { out[k] = v })
	return out
}

// reset empties the map.
func (m *readMap[K, V]) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.read.Store(nil)
	m.dirty, m.misses = nil, 0
}
